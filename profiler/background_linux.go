package profiler

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// backgroundNice is the nice value of the compression workers' threads:
// weight 110 against a stage thread's 1024, so the scheduler runs them
// mostly when a stage's thread does not want its CPU, yet still gives them
// about a tenth of a contended CPU (compression needs ~2.5% of the machine
// at full load, BENCHMARKS.md): lower would risk starving them, and a
// starved worker blocks the logging thread at its next hand-off.
const backgroundNice = 10

// background locks the calling goroutine to its OS thread, names the
// thread ThreadName (a run's host accounting then shows the
// profiler's own CPU next to its stages', and top -H shows who it is) and
// lowers its priority to backgroundNice. At the stages' priority a worker
// that woke on a spinning sender's CPU shared it in scheduler slices of
// milliseconds, and the sender was as late: profiled sweeps failed on p99
// lateness of 5-126 ms at rates that unprofiled ones passed. The goroutine
// must never unlock: the runtime retires the thread when it exits, rather
// than hand its priority to other goroutines.
//
// The worker calls the returned restore as it exits, which gives the
// thread its priority back: a goroutine locked to the process's main
// thread cannot retire it (the runtime parks that thread for good), and
// it stayed at nice 10 in 1 of about 10 clean-clone CI runs
// (TestCompressionWorkersRunAtBackgroundPriority, 2026-11-28).
func background() (restore func(), err error) {
	runtime.LockOSThread()
	// Naming cannot fail for a valid name on Linux; if it did, the thread
	// would only be counted as "other", no record would depend on it.
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&threadName[0])), 0, 0, 0)
	tid := unix.Gettid()
	was, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return func() {}, fmt.Errorf("read the thread's priority: %w", err)
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, backgroundNice); err != nil {
		return func() {}, fmt.Errorf("lower the thread's priority to nice %d: %w", backgroundNice, err)
	}
	// getpriority(2) returns 20 - nice on Linux
	return func() { _ = unix.Setpriority(unix.PRIO_PROCESS, tid, 20-was) }, nil
}

// threadName is ThreadName as the C string prctl reads.
var threadName = append([]byte(ThreadName), 0)
