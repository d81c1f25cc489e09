//go:build amd64

package tsc

// Native reports whether Read returns the CPU's time-stamp counter. On amd64
// it does; see tsc_other.go for the fallback elsewhere.
const Native = true

func rdtscp() (ticks uint64, aux uint32)
func rdtsc() uint64

// Read returns the TSC with RDTSCP, which waits for earlier instructions to
// retire, so a timestamp is not taken before the work it follows (~19 ns here).
func Read() uint64 {
	t, _ := rdtscp()
	return t
}

// ReadFast returns the TSC with RDTSC (~11 ns): not ordered with respect to
// earlier instructions, good enough for a busy-wait that compares against a
// deadline.
func ReadFast() uint64 { return rdtsc() }
