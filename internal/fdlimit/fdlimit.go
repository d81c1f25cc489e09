package fdlimit

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Free is the process's descriptor limit minus the descriptors open; false
// where they cannot be counted (no /proc).
func Free() (int, bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	open := len(names) - 1 // the directory's own descriptor
	if lim.Cur > 1<<30 {
		return 1 << 30, true
	}
	return int(lim.Cur) - open, true
}

// Check refuses, with a message that says what to do, when fewer than need
// descriptors are free. Where they cannot be counted it checks nothing.
func Check(need int) error {
	free, ok := Free()
	if !ok || free >= need {
		return nil
	}
	return fmt.Errorf("only %d file descriptors are free and at least %d are needed: "+
		"raise the limit (ulimit -n), or find what holds them (ls /proc/%d/fd)", free, need, os.Getpid())
}
