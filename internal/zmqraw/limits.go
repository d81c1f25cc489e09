package zmqraw

import (
	"fmt"
	"strings"
)

// Limits of the socket settings that senders and receivers share; every
// value from a flag or a request is checked against them.
const (
	MaxEndpointLen = 256
	MaxHWM         = 1_000_000 // messages
	MaxIOThreads   = 64
	MaxCPU         = 4095
	// DefaultHWM replaces a high-water mark of 0, which ZeroMQ would take
	// as an unbounded queue.
	DefaultHWM = 1000
)

// Sockets are the settings of a process's data sockets.
type Sockets struct {
	Endpoints    []string
	MaxEndpoints int
	HWM          int
	IOThreads    int
	CPUs         []int
}

// Problems lists what is out of range (none: nil); it allocates only for
// the messages.
func (s Sockets) Problems() []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	switch {
	case len(s.Endpoints) == 0:
		bad("no endpoint given (e.g. tcp://host:5555)")
	case len(s.Endpoints) > s.MaxEndpoints:
		bad("at most %d endpoints, got %d", s.MaxEndpoints, len(s.Endpoints))
	}
	for _, ep := range s.Endpoints {
		if len(ep) > MaxEndpointLen || !strings.Contains(ep, "://") {
			bad("endpoint %.64q is not a ZeroMQ endpoint like tcp://host:port", ep)
			break
		}
		// libzmq takes a C string: a NUL would cut the endpoint short,
		// and no control character belongs in an address.
		if i := strings.IndexFunc(ep, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
			bad("endpoint %.64q has a control character at byte %d", ep, i)
			break
		}
	}
	if s.HWM < 0 || s.HWM > MaxHWM {
		bad("hwm must be 0 to %d messages, got %d", MaxHWM, s.HWM)
	}
	if s.IOThreads < 0 || s.IOThreads > MaxIOThreads {
		bad("io-threads must be 0 to %d, got %d", MaxIOThreads, s.IOThreads)
	}
	if len(s.CPUs) > MaxCPU+1 {
		bad("at most %d CPUs", MaxCPU+1)
	}
	for _, cpu := range s.CPUs {
		if cpu < 0 || cpu > MaxCPU {
			bad("CPU %d is out of range 0..%d", cpu, MaxCPU)
			break
		}
	}
	return out
}

// Defaults returns the high-water mark and I/O threads to use for the
// validated values (0 means the default).
func Defaults(hwm, ioThreads int) (int, int) {
	if hwm == 0 {
		hwm = DefaultHWM
	}
	if ioThreads == 0 {
		ioThreads = 1
	}
	return hwm, ioThreads
}
