package profiler

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLiveSwitchLosesNothing switches a channel between recording handlers
// and a counter every few hundred microseconds while its writer logs
// without pause: every id lands exactly once, in a file (in order within
// each file) or in the counter, and no file is truncated by a later one.
func TestLiveSwitchLosesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "recv.log")
	p := New(time.Hour)
	ch, err := p.Open("recv", Config{Handler: HandlerBuffered, Path: path, BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	// The writer logs until told to stop (after 200 switches, or 10 s).
	var stop atomic.Bool
	var n uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the single writer
		defer wg.Done()
		for !stop.Load() {
			for i := 0; i < 1000; i++ {
				ch.LogTS(n)
				n++
			}
		}
	}()
	cycle := []Config{
		{Handler: HandlerIdentity, Path: path},
		{Handler: HandlerSPC},
		{Handler: HandlerBuffered, Path: path, BlockSize: 1000, Codec: "none"},
		{Handler: HandlerMPC},
		{Handler: HandlerBuffered, Path: path, BlockSize: 3000},
	}
	switches := 0
	for deadline := time.Now().Add(10 * time.Second); switches < 200 && time.Now().Before(deadline); switches++ {
		if err := p.Switch("recv", cycle[switches%len(cycle)]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	stop.Store(true)
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	files, recorded := 0, 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		recs := readAll(t, filepath.Join(dir, e.Name()))
		files++
		for i, r := range recs {
			if r.ID >= n || seen[r.ID] {
				t.Fatalf("%s: id %d out of range or logged twice", e.Name(), r.ID)
			}
			if i > 0 && r.ID <= recs[i-1].ID {
				t.Fatalf("%s: id %d after %d: out of order", e.Name(), r.ID, recs[i-1].ID)
			}
			seen[r.ID] = true
		}
		recorded += len(recs)
	}
	var counted uint64
	for _, c := range p.Counts("recv") {
		counted += c
	}
	if uint64(recorded)+counted != n {
		t.Fatalf("%d switches: %d recorded in %d files + %d counted = %d, want %d", switches, recorded, files, counted, uint64(recorded)+counted, n)
	}
	if switches < 50 || files < 3 || counted == 0 {
		t.Fatalf("the test did not exercise switching: %d switches, %d files, %d counted", switches, files, counted)
	}
	t.Logf("%d switches under one writer: %d ids recorded in %d files, %d counted, none lost or repeated", switches, recorded, files, counted)
}

// TestSwitchSharedCounter switches an MPC channel with several writers to
// Null and back: the counts before and after add up exactly.
func TestSwitchSharedCounter(t *testing.T) {
	p := New(time.Hour)
	ch, err := p.Open("ops", Config{Handler: HandlerMPC})
	if err != nil {
		t.Fatal(err)
	}
	const writers, per = 4, 200_000
	var wg sync.WaitGroup
	phase := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ch.LogTS(uint64(i))
			}
			<-phase
			for i := 0; i < per; i++ {
				ch.LogTS(uint64(i)) // Null: not counted
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	// Switch only after every writer's first phase is surely done.
	for done := false; !done; {
		var total uint64
		p.sampler.mu.Lock()
		total = p.sampler.chans["ops"].total()
		p.sampler.mu.Unlock()
		done = total == writers*per
		time.Sleep(time.Millisecond)
	}
	if err := p.Switch("ops", Config{Handler: HandlerNull}); err != nil {
		t.Fatal(err)
	}
	if !ch.Null() {
		t.Fatal("a channel switched to Null does not say so")
	}
	close(phase)
	wg.Wait()
	if err := p.Switch("ops", Config{Handler: HandlerMPC}); err != nil {
		t.Fatal(err)
	}
	ch.LogTS(1)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, c := range p.Counts("ops") {
		sum += c
	}
	if sum != writers*per+1 {
		t.Fatalf("counted %d, want %d", sum, writers*per+1)
	}
}

// TestSwitchErrors: a bad configuration leaves the channel as it was.
func TestSwitchErrors(t *testing.T) {
	dir := t.TempDir()
	p := New(time.Hour)
	defer p.Close()
	ch, _ := p.Open("a", Config{Handler: HandlerSPC})
	for _, bad := range []Config{{Handler: "bogus"}, {Handler: HandlerBuffered}, {Handler: HandlerXoY, X: 3, Y: 2, Path: filepath.Join(dir, "x")}} {
		if err := p.Switch("a", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := p.Switch("nope", Config{}); err == nil {
		t.Error("switching an unknown channel accepted")
	}
	ch.LogTS(1)
	if got := ch.Config().Handler; got != HandlerSPC {
		t.Fatalf("after refused switches the handler is %q", got)
	}
}

// TestLogRangeAt: a run of ids logs like one LogTSAt per id, by handler.
func TestLogRangeAt(t *testing.T) {
	dir := t.TempDir()
	p := New(time.Hour)
	buf, _ := p.Open("b", Config{Handler: HandlerBuffered, Path: filepath.Join(dir, "b.log"), BlockSize: 7})
	xy, _ := p.Open("x", Config{Handler: HandlerXoY, X: 1, Y: 10, Path: filepath.Join(dir, "x.log")})
	spc, _ := p.Open("s", Config{Handler: HandlerSPC})
	mpc, _ := p.Open("m", Config{Handler: HandlerMPC})
	null, _ := p.Open("n", Config{})
	for _, c := range []*Channel{buf, xy, spc, mpc, null} {
		c.LogRangeAt(100, 1000, 50)
		c.LogRangeAt(200, 1050, 50)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, filepath.Join(dir, "b.log"))
	if len(recs) != 100 {
		t.Fatalf("buffered: %d records", len(recs))
	}
	for i, r := range recs {
		want := uint64(100)
		if i >= 50 {
			want = 200
		}
		if r.ID != 1000+uint64(i) || r.TSC != want {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if x := readAll(t, filepath.Join(dir, "x.log")); len(x) != 10 || x[0].ID != 1000 || x[9].ID != 1090 {
		t.Fatalf("xoy kept %+v", x)
	}
	for _, name := range []string{"s", "m"} {
		var sum uint64
		for _, c := range p.Counts(name) {
			sum += c
		}
		if sum != 100 {
			t.Fatalf("%s counted %d, want 100", name, sum)
		}
	}
}

// A running process turns a channel from Null into a log and back without
// restarting: the writer never stops.
func ExampleProfiler_Switch() {
	dir, _ := os.MkdirTemp("", "cp-example")
	defer os.RemoveAll(dir)
	p := New(time.Second)
	recv, _ := p.Open("receive", Config{Handler: HandlerNull})
	for id := uint64(0); id < 100; id++ {
		if id == 40 {
			_ = p.Switch("receive", Config{Handler: HandlerBuffered, Path: filepath.Join(dir, "receive.log")})
		}
		if id == 60 {
			_ = p.Switch("receive", Config{Handler: HandlerNull})
		}
		recv.LogTS(id)
	}
	_ = p.Close()
	f, _ := os.Open(filepath.Join(dir, "receive.log"))
	defer f.Close()
	var logged []uint64
	_, _ = ReadBlocks(f, func(recs []Record) error {
		for _, r := range recs {
			logged = append(logged, r.ID)
		}
		return nil
	})
	fmt.Println(len(logged), "ids logged, from", logged[0], "to", logged[len(logged)-1])
	// Output: 20 ids logged, from 40 to 59
}
