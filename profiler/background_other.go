//go:build !linux

package profiler

// background leaves the thread's priority alone where there is no
// per-thread nice value to lower (the workers then run at the stages'
// priority; see background_linux.go).
func background() (restore func(), err error) { return func() {}, nil }
