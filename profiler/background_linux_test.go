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

// threadComm is a thread's kernel name.
func threadComm(t *testing.T, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/comm", tid))
	if err != nil {
		t.Error(err)
	}
	return strings.TrimSpace(string(b))
}

// background lowers only its own thread: the goroutine's thread has nice
// backgroundNice and the test's own thread keeps its nice value.
func TestBackgroundLowersOnlyItsThread(t *testing.T) {
	before := mustNice(t, unix.Gettid())
	callerName := threadComm(t, unix.Gettid())
	type res struct {
		nice, restored int
		name           string
		err            error
	}
	ch := make(chan res)
	go func() {
		restore, err := background()
		n, ok := threadNice(unix.Gettid())
		if !ok {
			n = -100
		}
		name := threadComm(t, unix.Gettid())
		restore()
		back, ok := threadNice(unix.Gettid())
		if !ok {
			back = -100
		}
		ch <- res{n, back, name, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.nice != backgroundNice {
		t.Fatalf("background thread nice %d, want %d", r.nice, backgroundNice)
	}
	if r.restored != before {
		t.Fatalf("restored to nice %d, want the thread's %d (a thread the runtime cannot retire keeps it)", r.restored, before)
	}
	if r.name != ThreadName {
		t.Fatalf("background thread is named %q, want %q (the host accounting finds the profiler's CPU by it)", r.name, ThreadName)
	}
	if got := mustNice(t, unix.Gettid()); got != before {
		t.Fatalf("the caller's thread went from nice %d to %d", before, got)
	}
	if got := threadComm(t, unix.Gettid()); got != callerName {
		t.Fatalf("the caller's thread was renamed from %q to %q", callerName, got)
	}
}

// A buffered channel's compression worker runs on such a thread, and the
// thread retires with the channel. Threads are followed by id: another
// test's channel left open may lower a thread of its own at any moment
// (its worker starting late on a busy machine), and counts would mistake
// it for this channel's.
func TestCompressionWorkersRunAtBackgroundPriority(t *testing.T) {
	before := loweredThreads(t)
	p := New(0)
	ch, err := p.Open("w", Config{Handler: HandlerBuffered, Path: t.TempDir() + "/w.log"})
	if err != nil {
		t.Fatal(err)
	}
	ch.LogTS(1)
	appeared := map[int]bool{}
	if !waitFor(func() bool {
		for tid := range loweredThreads(t) {
			if !before[tid] {
				appeared[tid] = true
			}
		}
		return len(appeared) > 0
	}) {
		t.Fatalf("no new thread at nice %d while a buffered channel is open", backgroundNice)
	}
	// The first to appear may be another test's late worker: every thread
	// lowered since Open counts, up to the Close.
	time.Sleep(20 * time.Millisecond)
	for tid := range loweredThreads(t) {
		if !before[tid] {
			appeared[tid] = true
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool {
		now := loweredThreads(t)
		for tid := range appeared {
			if !now[tid] {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("threads %v at nice %d are all still there after the channel closed (a lowered thread went back to the pool)", appeared, backgroundNice)
	}
}

// loweredThreads is the set of the process's threads at backgroundNice.
func loweredThreads(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			if n, ok := threadNice(tid); ok && n == backgroundNice {
				out[tid] = true
			}
		}
	}
	return out
}

// waitFor polls cond for up to 2 s.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// threadNice reads field 19 (nice) of /proc/self/task/TID/stat; false if
// the thread is gone (it may exit between a listing and the read).
func threadNice(tid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3: the name may hold spaces
	if len(f) < 17 {
		return 0, false
	}
	n, err := strconv.Atoi(f[16])
	return n, err == nil
}

// mustNice is threadNice for a thread that must be there.
func mustNice(t *testing.T, tid int) int {
	t.Helper()
	n, ok := threadNice(tid)
	if !ok {
		t.Fatalf("cannot read the nice value of thread %d", tid)
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
