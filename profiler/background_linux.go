package profiler

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// backgroundNice is the nice value of the compression workers' threads:
// weight 110 against a stage thread's 1024, so the scheduler runs them
// mostly when a stage's thread does not want its CPU, yet still gives them
// about a tenth of a contended CPU (compression needs ~2.5% of the machine
// at full load, BENCHMARKS.md): lower would risk starving them, and a
// starved worker blocks the logging thread at its next hand-off.
const backgroundNice = 10

// background locks the calling goroutine to its OS thread and lowers that
// thread's priority to backgroundNice. At the stages' priority a worker
// that woke on a spinning sender's CPU shared it in scheduler slices of
// milliseconds, and the sender was as late: profiled sweeps failed on p99
// lateness of 5-126 ms at rates that unprofiled ones passed. The goroutine
// must never unlock: the runtime retires the thread when it exits, rather
// than hand its priority to other goroutines.
func background() error {
	runtime.LockOSThread()
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), backgroundNice); err != nil {
		return fmt.Errorf("lower the thread's priority to nice %d: %w", backgroundNice, err)
	}
	return nil
}
