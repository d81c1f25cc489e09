package profiler

import (
	"bytes"
	"encoding/binary"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestReturnTrip runs ReT-Start and ReT-End in one process over loopback
// UDP: every start and end is logged, every sampled end is acknowledged and
// its ack logged on the start's clock after the start, and foreign packets
// are counted, not logged.
func TestReturnTrip(t *testing.T) {
	dir := t.TempDir()
	p := New(time.Hour)
	start, err := p.Open("emit", Config{Handler: HandlerReTStart, Path: filepath.Join(dir, "emit.log"), Listen: "127.0.0.1:0", BlockSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	_, addr := p.ReT("emit")
	if addr == "" {
		t.Fatal("no listener address for the ret-start channel")
	}
	end, err := p.Open("consumed", Config{Handler: HandlerReTEnd, Path: filepath.Join(dir, "consumed.log"), Peer: addr, X: 1, Y: 2, BlockSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	junk, _ := net.Dial("udp", addr)
	_, _ = junk.Write([]byte("hello"))
	junk.Close()
	const n = 2000
	// This is a test of bookkeeping, not of UDP: after every 100 tuples it
	// waits until their 50 acks have arrived, so that a busy machine
	// cannot overflow the socket's buffer and lose some.
	waitAcks := func(want uint64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			st, _ := p.ReT("emit")
			if st.AcksReceived >= want && st.AcksMalformed == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: %+v, want %d acks and 1 malformed", st, want)
			}
		}
	}
	for id := uint64(0); id < n; id++ {
		start.LogTS(id)
		end.LogTS(id)
		if id%100 == 99 {
			waitAcks((id + 1) / 2)
		}
	}
	st, _ := p.ReT("emit")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if st.AcksReceived != n/2 || st.AcksMalformed != 1 {
		t.Fatalf("acks: %+v, want %d received and 1 malformed", st, n/2)
	}
	starts := readAll(t, filepath.Join(dir, "emit.log"))
	ends := readAll(t, filepath.Join(dir, "consumed.log"))
	acks := readAll(t, filepath.Join(dir, "emit.log.ack"))
	if len(starts) != n || len(ends) != n || len(acks) != n/2 {
		t.Fatalf("logged %d starts, %d ends, %d acks", len(starts), len(ends), len(acks))
	}
	at := map[uint64]uint64{}
	for _, r := range starts {
		at[r.ID] = r.TSC
	}
	for _, a := range acks {
		if a.ID%2 != 0 {
			t.Fatalf("id %d acknowledged but not sampled (x=1, y=2)", a.ID)
		}
		if a.TSC < at[a.ID] {
			t.Fatalf("id %d: ack at %d before its start at %d", a.ID, a.TSC, at[a.ID])
		}
	}
	for _, bad := range []Config{{Handler: HandlerReTStart, Path: filepath.Join(dir, "x")}, {Handler: HandlerReTEnd, Path: filepath.Join(dir, "y")},
		{Handler: HandlerReTEnd, Path: filepath.Join(dir, "z"), Peer: addr, X: 3, Y: 2}} {
		if _, err := New(time.Hour).Open("c", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func FuzzDecodeAck(f *testing.F) {
	f.Add(encodeAck(nil, 42))
	f.Add([]byte("CPRA"))
	f.Add(append(encodeAck(nil, 7)[:5:5], 1, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0)) // a reserved byte set
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := decodeAck(b)
		// Accepted means: exactly the bytes encodeAck writes for that id.
		if err == nil && !bytes.Equal(encodeAck(nil, id), b) {
			t.Fatalf("accepted % x as id %d, which encodes to % x", b, id, encodeAck(nil, id))
		}
		if err == nil && id != binary.LittleEndian.Uint64(b[8:]) {
			t.Fatalf("id %d from % x", id, b)
		}
	})
}
