package profiler

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// background lowers only its own thread: the goroutine's thread has nice
// backgroundNice and the test's own thread keeps its nice value.
func TestBackgroundLowersOnlyItsThread(t *testing.T) {
	before := threadNice(t, unix.Gettid())
	type res struct {
		nice int
		err  error
	}
	ch := make(chan res)
	go func() {
		err := background()
		ch <- res{threadNice(t, unix.Gettid()), err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.nice != backgroundNice {
		t.Fatalf("background thread nice %d, want %d", r.nice, backgroundNice)
	}
	if got := threadNice(t, unix.Gettid()); got != before {
		t.Fatalf("the caller's thread went from nice %d to %d", before, got)
	}
}

// A buffered channel's compression worker runs on such a thread, and the
// thread retires with the channel.
func TestCompressionWorkersRunAtBackgroundPriority(t *testing.T) {
	// Threads lowered by earlier tests retire when their goroutines exit,
	// a moment later (a test that leaves a channel open keeps its worker's
	// thread): settle first, then count from there.
	base := niceCounts(t)[backgroundNice]
	waitFor(func() bool {
		time.Sleep(20 * time.Millisecond)
		n := niceCounts(t)[backgroundNice]
		settled := n == base
		base = n
		return settled
	})
	p := New(0)
	ch, err := p.Open("w", Config{Handler: HandlerBuffered, Path: t.TempDir() + "/w.log"})
	if err != nil {
		t.Fatal(err)
	}
	ch.LogTS(1)
	if !waitFor(func() bool { return niceCounts(t)[backgroundNice] > base }) {
		t.Fatalf("no new thread at nice %d while a buffered channel is open (%d before)", backgroundNice, base)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return niceCounts(t)[backgroundNice] <= base }) {
		t.Fatalf("threads at nice %d after the channel closed: %d, %d before (a lowered thread went back to the pool)", backgroundNice, niceCounts(t)[backgroundNice], base)
	}
}

// waitFor polls cond for up to 2 s.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// niceCounts counts the process's threads by nice value.
func niceCounts(t *testing.T) map[int]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		out[threadNice(t, tid)]++
	}
	return out
}

// threadNice reads field 19 (nice) of /proc/self/task/TID/stat.
func threadNice(t *testing.T, tid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		t.Errorf("thread %d: %v", tid, err)
		return -100
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3: the name may hold spaces
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Errorf("thread %d: nice %q: %v", tid, f[16], err)
	}
	return n
}

// The first hand-off takes the spare block made when the channel opened
// instead of making one on the logging thread (a 1 M-run block is 24 MB,
// zeroed by the runtime when its memory is reused: milliseconds in the
// middle of a stage's schedule).
func TestFirstHandOffTakesTheSpareBlock(t *testing.T) {
	const size = 1024
	p := New(0)
	defer p.Close()
	ch, err := p.Open("h", Config{Handler: HandlerBuffered, Path: t.TempDir() + "/h.log", BlockSize: size})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := ch.load().h.(*buffered)
	if !ok {
		t.Fatalf("handler %T, want *buffered", ch.load().h)
	}
	if len(b.s.free) != 1 {
		t.Fatalf("%d spare blocks after open, want 1", len(b.s.free))
	}
	spare := <-b.s.free
	b.s.free <- spare
	for i := uint64(0); i < size; i++ {
		ch.LogTS(i) // the size-th call hands the block off
	}
	if b.records != 0 || &b.block[:1][0] != &spare[:1][0] {
		t.Fatalf("after the hand-off: %d records in the block, the spare taken: %v", b.records, &b.block[:1][0] == &spare[:1][0])
	}
}
