package osthread

import (
	"fmt"
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
