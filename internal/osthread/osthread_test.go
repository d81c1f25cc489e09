package osthread

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"", nil, false}, {"none", nil, false}, {"1", []int{1}, false}, {"0,2", []int{0, 2}, false},
		{"0-2,5", []int{0, 1, 2, 5}, false}, {"x", nil, true}, {"3-1", nil, true}, {"-1", nil, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestPinThread(t *testing.T) {
	cpus, err := Allowed()
	if err != nil || len(cpus) == 0 {
		t.Fatal(cpus, err)
	}
	want := cpus[len(cpus)-1]
	done := make(chan error)
	go func() {
		if err := PinThread(want); err != nil {
			done <- err
			return
		}
		// The kernel's view of this very thread: only the CPU asked for.
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			done <- err
			return
		}
		if set.Count() != 1 || !set.IsSet(want) {
			done <- fmt.Errorf("thread affinity has %d CPUs (CPU %d set: %v), want only CPU %d", set.Count(), want, set.IsSet(want), want)
			return
		}
		done <- nil // the goroutine exits locked: the pinned thread is not reused
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The process's other threads keep every allowed CPU.
	if after, err := Allowed(); err != nil || len(after) != len(cpus) {
		t.Fatalf("the test's own thread lost CPUs: %v -> %v (%v)", cpus, after, err)
	}
}

// TestNapIsShort: Nap does not round short sleeps up to a millisecond as
// time.Sleep does. The minimum overshoot of 20 naps says so even while the
// other tests load the machine (a p90 does not).
func TestNapIsShort(t *testing.T) {
	done := make(chan time.Duration)
	go func() {
		LockWithTightTimers()
		best := time.Hour
		for i := 0; i < 20; i++ {
			start := time.Now()
			Nap(50 * time.Microsecond)
			best = min(best, time.Since(start)-50*time.Microsecond)
		}
		done <- best
	}()
	over := <-done
	t.Logf("nanosleep(50us): smallest overshoot of 20 naps %v", over)
	if over > 500*time.Microsecond {
		t.Fatalf("every nap overshot by %v or more", over)
	}
}

// threadMasks reads every thread's allowed CPUs as the kernel sees them.
func threadMasks(t *testing.T) map[int][]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]int{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // the thread exited
		}
		var cpus []int
		for c := 0; c < 1024; c++ {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
		out[tid] = cpus
	}
	return out
}

func TestConfineProcess(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skip("needs 2 CPUs to confine the process to one and pin a thread to another")
	}
	defer func() { // the other tests run in this process
		if err := ConfineProcess(allowed); err != nil {
			t.Fatal(err)
		}
	}()
	procs := runtime.GOMAXPROCS(0)
	// A thread started before the confinement and one started after it.
	stop := make(chan struct{})
	defer close(stop)
	startThread := func() int {
		tid := make(chan int)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid <- unix.Gettid()
			<-stop
		}()
		return <-tid
	}
	before := startThread()
	other, worker := allowed[0], allowed[len(allowed)-1]
	if err := ConfineProcess([]int{other}); err != nil {
		t.Fatal(err)
	}
	after := startThread()
	pinned := make(chan int)
	go func() {
		if err := PinThread(worker); err != nil {
			t.Error(err)
		}
		pinned <- unix.Gettid()
		<-stop
	}()
	pinnedTid := <-pinned
	masks := threadMasks(t)
	for _, tid := range []int{before, after} {
		if !reflect.DeepEqual(masks[tid], []int{other}) {
			t.Errorf("thread %d: CPUs %v, want [%d]", tid, masks[tid], other)
		}
	}
	for tid, m := range masks {
		if tid != pinnedTid && !reflect.DeepEqual(m, []int{other}) {
			t.Errorf("thread %d left on CPUs %v, want [%d]", tid, m, other)
		}
	}
	if !reflect.DeepEqual(masks[pinnedTid], []int{worker}) {
		t.Errorf("pinned thread on %v, want [%d]", masks[pinnedTid], worker)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after confining, want %d kept", got, procs)
	}
	if err := ConfineProcess(nil); err != nil {
		t.Errorf("no CPUs: %v (it should leave the process as it is)", err)
	}
}
