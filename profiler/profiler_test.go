package profiler

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func readAll(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	bad, err := ReadBlocks(f, func(recs []Record) error { out = append(out, recs...); return nil })
	if err != nil || len(bad) > 0 {
		t.Fatalf("read %s: %v %v", path, bad, err)
	}
	return out
}

func ids(recs []Record) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func TestHandlersKeepWhatTheirDefinitionSays(t *testing.T) {
	dir := t.TempDir()
	const n = 1000
	for _, tc := range []struct {
		cfg  Config
		want func(id uint64, call int) bool // is the call-th LogTS (0-based, id = 1000+call) kept?
	}{
		{Config{Handler: HandlerBuffered, BlockSize: 64}, func(uint64, int) bool { return true }},
		{Config{Handler: HandlerBuffered, BlockSize: 64, Codec: "none", Workers: 3}, func(uint64, int) bool { return true }},
		{Config{Handler: HandlerIdentity}, func(uint64, int) bool { return true }},
		{Config{Handler: HandlerDownsample, Every: 7, BlockSize: 16}, func(_ uint64, call int) bool { return (call+1)%7 == 0 }},
		{Config{Handler: HandlerXoY, X: 3, Y: 10, BlockSize: 16}, func(id uint64, _ int) bool { return id%10 < 3 }},
		{Config{Handler: HandlerFirstLast}, func(_ uint64, call int) bool { return call == 0 || call == n-1 }},
	} {
		p := New(time.Hour)
		tc.cfg.Path = filepath.Join(dir, tc.cfg.Handler+tc.cfg.Codec+".log")
		ch, err := p.Open("c", tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var want []uint64
		for call := 0; call < n; call++ {
			id := uint64(1000 + call)
			ch.LogTS(id)
			if tc.want(id, call) {
				want = append(want, id)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		recs := readAll(t, tc.cfg.Path)
		if fmt.Sprint(ids(recs)) != fmt.Sprint(want) {
			t.Errorf("%+v: kept %d ids %v..., want %d %v...", tc.cfg, len(recs), head(ids(recs)), len(want), head(want))
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].TSC < recs[i-1].TSC {
				t.Errorf("%s: TSC went backwards at record %d", tc.cfg.Handler, i)
			}
		}
	}
}

func head(v []uint64) []uint64 { return v[:min(len(v), 5)] }

func TestASCIIFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	p := New(time.Hour)
	ch, _ := p.Open("a", Config{Handler: HandlerBuffered, Format: FormatASCII, Path: path, BlockSize: 3})
	for i := uint64(0); i < 10; i++ {
		ch.LogTS(i * 11)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var i uint64
	for ; sc.Scan(); i++ {
		if parts := strings.Split(sc.Text(), ","); len(parts) != 2 || parts[1] != fmt.Sprint(i*11) {
			t.Fatalf("line %d: %q", i, sc.Text())
		}
	}
	if i != 10 {
		t.Fatalf("%d lines, want 10", i)
	}
}

// TestCountersAddUp: periods sampled in lock step add up to the total, for
// a single writer (SPC) and for concurrent writers (MPC; run with -race).
func TestCountersAddUp(t *testing.T) {
	p := New(5 * time.Millisecond)
	s, _ := p.Open("spc", Config{Handler: HandlerSPC})
	m, _ := p.Open("mpc", Config{Handler: HandlerMPC})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50000; i++ {
				m.LogTS(uint64(i))
				if i%1000 == 0 {
					time.Sleep(time.Microsecond)
				}
			}
		}()
	}
	for i := 0; i < 120000; i++ {
		s.LogTS(uint64(i))
		if i%5000 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{"spc": 120000, "mpc": 200000} {
		var sum uint64
		periods := p.Counts(name)
		for _, c := range periods {
			sum += c
		}
		if sum != want || len(periods) < 2 {
			t.Fatalf("%s: %d periods adding up to %d, want %d", name, len(periods), sum, want)
		}
	}
	if len(p.Counts("spc")) != len(p.Counts("mpc")) {
		t.Fatal("counter channels were not sampled in lock step")
	}
}

// TestCorruptionIsReportedAndIntactBlocksSurvive damages a log (flipped
// bytes in one block, a truncated tail) and reads every other block back.
func TestCorruptionIsReportedAndIntactBlocksSurvive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	p := New(time.Hour)
	ch, _ := p.Open("c", Config{Handler: HandlerBuffered, Path: path, BlockSize: 100})
	for i := uint64(0); i < 1000; i++ { // 10 blocks
		ch.LogTS(i)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	// find the offsets of the blocks
	var offs []int
	for i := 0; i+4 <= len(data); i++ {
		if bytes.Equal(data[i:i+4], []byte("CPLB")) {
			offs = append(offs, i)
		}
	}
	if len(offs) != 10 {
		t.Fatalf("%d blocks, want 10", len(offs))
	}
	damaged := append([]byte(nil), data...)
	damaged[offs[3]+blockHeader+5] ^= 0xff    // payload of block 4
	damaged = damaged[:offs[9]+blockHeader+3] // block 10 truncated
	var got []uint64
	bad, err := ReadBlocks(bytes.NewReader(damaged), func(recs []Record) error { got = append(got, ids(recs)...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || bad[0].Offset != int64(offs[3]) || !strings.Contains(bad[0].Reason, "checksum") || bad[1].Offset != int64(offs[9]) || !strings.Contains(bad[1].Reason, "truncated") {
		t.Fatalf("corruption reports: %+v", bad)
	}
	if len(got) != 800 || got[0] != 0 || got[299] != 299 || got[300] != 400 || got[799] != 899 {
		t.Fatalf("recovered %d records (%v...), want blocks 1-3 and 5-9", len(got), head(got))
	}
}

func TestOpenRejectsBadConfigs(t *testing.T) {
	p := New(time.Hour)
	defer p.Close()
	dir := t.TempDir()
	for _, cfg := range []Config{
		{Handler: "sparkle"}, {Handler: HandlerBuffered}, {Handler: HandlerXoY, Path: filepath.Join(dir, "x"), X: 3, Y: 2},
		{Handler: HandlerDownsample, Path: filepath.Join(dir, "d")}, {Handler: HandlerBuffered, Path: filepath.Join(dir, "b"), Codec: "lz4"},
		{Handler: HandlerNull, Format: "xml"},
	} {
		if _, err := p.Open(fmt.Sprint(cfg), cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := p.Open("n", Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open("n", Config{}); err == nil {
		t.Error("a channel opened twice")
	}
}

func TestLogTSDoesNotAllocate(t *testing.T) {
	dir := t.TempDir()
	p := New(time.Hour)
	defer p.Close()
	for _, cfg := range []Config{{Handler: HandlerNull}, {Handler: HandlerSPC}, {Handler: HandlerMPC},
		{Handler: HandlerXoY, X: 1, Y: 8, Path: filepath.Join(dir, "x"), BlockSize: 1 << 16},
		{Handler: HandlerDownsample, Every: 4, Path: filepath.Join(dir, "d"), BlockSize: 1 << 16},
		{Handler: HandlerBuffered, Path: filepath.Join(dir, "b"), BlockSize: 1 << 16}} {
		ch, err := p.Open(cfg.Handler, cfg)
		if err != nil {
			t.Fatal(err)
		}
		id := uint64(0)
		if a := testing.AllocsPerRun(10000, func() { ch.LogTS(id); id++ }); a != 0 {
			t.Errorf("%s: %.2f allocations per LogTS", cfg.Handler, a)
		}
	}
}

func Example() {
	dir, _ := os.MkdirTemp("", "cp-example")
	defer os.RemoveAll(dir)
	p := New(time.Second)
	// One channel per instrumentation point; the handler decides the cost.
	received, _ := p.Open("receive", Config{Handler: HandlerBuffered, Path: filepath.Join(dir, "receive.log")})
	consumed, _ := p.Open("consume", Config{Handler: HandlerSPC})
	for id := uint64(1); id <= 3; id++ {
		received.LogTS(id)
		consumed.LogTS(id)
	}
	_ = p.Close() // flushes every record
	f, _ := os.Open(filepath.Join(dir, "receive.log"))
	defer f.Close()
	_, _ = ReadBlocks(f, func(recs []Record) error {
		for _, r := range recs {
			fmt.Println("tuple", r.ID)
		}
		return nil
	})
	fmt.Println("consumed", p.Counts("consume"))
	// Output:
	// tuple 1
	// tuple 2
	// tuple 3
	// consumed [3]
}

// XoY and Downsample keep the same ids from ranges as from single ids,
// wherever the ranges start and end, and whatever their parameters are.
func TestSamplingRangesKeepWhatSingleIDsKeep(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	type sampler struct {
		cfg  Config
		keep func(id, call uint64) bool
	}
	var cases []sampler
	for _, xy := range [][2]uint64{{1, 100}, {3, 10}, {1, 1}, {7, 7}, {2, 3}} {
		cases = append(cases, sampler{Config{Handler: HandlerXoY, X: xy[0], Y: xy[1]}, func(id, _ uint64) bool { return id%xy[1] < xy[0] }})
	}
	for _, every := range []uint64{1, 7, 100, 1000} {
		cases = append(cases, sampler{Config{Handler: HandlerDownsample, Every: every}, func(_, call uint64) bool { return (call+1)%every == 0 }})
	}
	for i, tc := range cases {
		p := New(time.Hour)
		path := filepath.Join(dir, fmt.Sprintf("s%d.log", i))
		tc.cfg.Path, tc.cfg.BlockSize = path, 64
		ch, err := p.Open("c", tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var want []uint64
		id, call := uint64(1<<48+12345), uint64(0)
		for i := 0; i < 300; i++ {
			n := uint64(rng.IntN(250))
			ch.LogRangeAt(uint64(i), id, n)
			for k := id; k < id+n; k, call = k+1, call+1 {
				if tc.keep(k, call) {
					want = append(want, k)
				}
			}
			id += n + uint64(rng.IntN(3))
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		got := ids(readAll(t, path))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: kept %d ids %v..., want %d %v...", tc.cfg, len(got), head(got), len(want), head(want))
		}
	}
}
