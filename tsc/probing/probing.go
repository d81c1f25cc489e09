package probing

import (
	"strings"
	"time"

	"os"

	"github.com/cloudprofiler-go/cp/tsc"
)

// Info describes a TSC client.
type Info struct {
	Host string `json:"host"`
	// Machine is the kernel's boot id (BootID): agents that report the
	// same one read the same clock, so durations between them need no
	// relation and have no clock error.
	Machine  string       `json:"machine,omitempty"`
	UDP      string       `json:"udp"` // the responder's address
	TSCHz    float64      `json:"tsc_hz"`
	Features tsc.Features `json:"features"`
	// The kernel's NTP error estimates (adjtimex), for comparison with the
	// TSC bounds (§6.4).
	NTPMaxErrorUs int64 `json:"ntp_maxerror_us"`
	NTPEstErrorUs int64 `json:"ntp_esterror_us"`
	NTPSynced     bool  `json:"ntp_synced"`
}

// Node is a TSC client as the server knows it.
type Node struct {
	Name    string `json:"name"`
	Control string `json:"control"` // host:port of the HTTP API
	Info    Info   `json:"info"`
}

// Pair is one ordered pair's probes: A probed B.
type Pair struct {
	A      string         `json:"a"`
	B      string         `json:"b"`
	Probes []tsc.Probe    `json:"probes"`
	Stats  tsc.ProbeStats `json:"stats"`
}

// Session is one probing round over every ordered pair.
type Session struct {
	Started time.Time `json:"started"`
	Nodes   []Node    `json:"nodes"`
	Pairs   []Pair    `json:"pairs"`
}

// Clock names the clock a client's ticks come from: its machine (boot id)
// and the kind of counter (the TSC, or the monotonic fallback). Clients
// with the same Clock read one clock; "" is unknown (no boot id), a clock
// shared with no one.
func (i Info) Clock() string {
	if i.Machine == "" {
		return ""
	}
	if i.Features.Native {
		return i.Machine + "/tsc"
	}
	return i.Machine + "/monotonic"
}

// BootID is the running kernel's boot id, the same in every container
// (pod) on one machine and new at every boot ("" when unreadable): what
// says that two processes read one TSC.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id") // the kernel's, at a fixed path
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
