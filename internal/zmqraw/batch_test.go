package zmqraw

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/cloudprofiler-go/cp/tsc"
)

func itemOf(b []byte, due uint64) BatchItem {
	return BatchItem{Buf: uintptr(unsafe.Pointer(unsafe.SliceData(b))), Len: uint64(len(b)), Due: due}
}

func TestSendBatchSendsInOrderAtTheirDueTimes(t *testing.T) {
	if !StampsTSC || !tsc.Native {
		t.Skip("SendBatch stamps the TSC on x86-64 only")
	}
	push, pull := pair(t)
	clock, err := tsc.NewClock(20 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	gap := clock.Ticks(20 * time.Microsecond)
	msgs := [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{7}, 300), []byte("last")}
	items := make([]BatchItem, len(msgs))
	start := tsc.ReadFast() + gap
	for i, m := range msgs {
		items[i] = itemOf(m, start+uint64(i)*gap)
	}
	sent, err := push.SendBatch(items)
	if sent != len(msgs) || err != nil {
		t.Fatalf("sent %d of %d, err %v", sent, len(msgs), err)
	}
	for i, it := range items {
		if it.At < it.Due {
			t.Errorf("item %d sent at %d, before its due time %d", i, it.At, it.Due)
		}
		if it.Ready > it.At {
			t.Errorf("item %d: ready %d after sent %d", i, it.Ready, it.At)
		}
		if i > 0 && it.Ready < items[i-1].At {
			t.Errorf("item %d's turn came at %d, before the previous was sent at %d", i, it.Ready, items[i-1].At)
		}
	}
	for i, m := range msgs {
		got, err := pull.Recv(0)
		if err != nil || !bytes.Equal(got, m) {
			t.Fatalf("message %d: %q (%v), want %q", i, got, err, m)
		}
	}
}

func TestSendBatchStopsAtTheFirstFullSend(t *testing.T) {
	r := peerless(t)
	msg := []byte("x")
	items := []BatchItem{itemOf(msg, 0), itemOf(msg, 0)}
	sent, err := r.SendBatch(items)
	if sent != 0 || err != ErrAgain {
		t.Fatalf("sent %d, err %v; want 0 and EAGAIN", sent, err)
	}
	if sent, err := r.SendBatch(nil); sent != 0 || err != nil {
		t.Fatalf("empty batch: %d, %v", sent, err)
	}
}

func TestSendBatchDoesNotAllocate(t *testing.T) {
	push, pull := pair(t)
	msg := make([]byte, 100)
	items := make([]BatchItem, 4)
	for i := range items {
		items[i] = itemOf(msg, 0)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if n, err := push.SendBatch(items); n != len(items) || err != nil {
			t.Fatal(n, err)
		}
		for range items {
			if _, err := pull.Recv(0); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per batch, want 0", allocs)
	}
}

func TestBatchItemMatchesTheCLayout(t *testing.T) {
	if !batchLayoutOK {
		t.Fatal("BatchItem's layout differs from cp_item")
	}
}
