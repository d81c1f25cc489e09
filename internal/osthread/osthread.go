package osthread

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Parse reads a list like "1", "0,2" or "0-3,6". An empty string or "none"
// yields nil (no pinning).
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: %q is not a CPU number", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Allowed returns the CPUs this process may run on.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// ConfineProcess restricts every thread of the process to cpus: those
// that exist now (the Go runtime's, the main thread) and so every thread
// they create later (ZeroMQ's I/O threads inherit their creator's mask;
// the runtime starts new threads from an unpinned one). Threads pinned
// afterwards with PinThread may still go anywhere, so the pinned workers
// can have CPUs of their own that nothing else of the process touches.
//
// GOMAXPROCS is fixed first at its current value: the runtime would
// otherwise follow the narrower mask down, and the pinned workers, which
// spin, each need a P of their own. Call it before any thread is pinned:
// it would move a pinned one too.
func ConfineProcess(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	// A thread the runtime starts while the list is read is caught by the
	// next pass (it inherited the old mask from an unconfined creator).
	for pass := 0; pass < 5; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("confine the process to CPUs %v: %w", cpus, err)
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("confine thread %d to CPUs %v: %w", tid, cpus, err)
			}
			done[tid], changed = true, true
		}
		if !changed {
			return nil
		}
	}
	return nil
}

// PinThread locks the calling goroutine to its OS thread and restricts that
// thread to cpu. The goroutine must never unlock: a re-pinned thread would
// go back to the scheduler's pool with the wrong mask, so the runtime
// retires it when the goroutine exits.
func PinThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, err)
	}
	return nil
}

// LockWithTightTimers locks the calling goroutine to its OS thread and sets
// that thread's timer slack to 1 ns, so Nap wakes when asked instead of up
// to 50 us later (the kernel's default slack).
func LockWithTightTimers() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// Yield gives the calling OS thread's CPU to any other runnable thread
// (sched_yield). For a goroutine locked to its thread it is what
// runtime.Gosched is not: Gosched hands a locked goroutine's thread off
// through the Go scheduler (futex wake-ups of another thread and back):
// perf showed it in a fifth of dgrecv's samples, and replacing it took
// the consumer alone at 10 µs of work per tuple from 87-89 k to 96.9 k
// tuples/s, the work's own bound (BENCHMARKS.md, 2026-11-23).
func Yield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// Nap blocks the calling OS thread for d with nanosleep. Unlike time.Sleep
// it does not round short sleeps up to a millisecond; it is for goroutines
// locked to their thread (LockWithTightTimers).
func Nap(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

// NapOvershoot measures how much later than asked a Nap of d wakes on this
// thread (the 90th percentile of n tries): the margin a paced loop must
// leave before its deadline when it sleeps.
func NapOvershoot(d time.Duration, n int) time.Duration {
	over := make([]time.Duration, n)
	for i := range over {
		start := time.Now()
		Nap(d)
		over[i] = max(time.Since(start)-d, 0)
	}
	slices.Sort(over)
	return over[n*9/10]
}
