package cpustat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUnsupported is Sample's error where /proc cannot be read.
var ErrUnsupported = errors.New("no /proc: host accounting needs Linux")

// clockTick is the kernel's USER_HZ, the unit of /proc/stat (100 on every
// Linux architecture this runs on).
const clockTick = 100

// hostTimes are /proc/stat's first line in seconds, summed over every CPU.
type hostTimes struct {
	Busy, Steal, Idle, Total float64
}

// parseHostStat reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal (guest time is inside user).
func parseHostStat(b []byte) (hostTimes, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return hostTimes{}, fmt.Errorf("/proc/stat: no cpu line")
	}
	var v [8]float64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return hostTimes{}, fmt.Errorf("/proc/stat: field %d: %w", i+1, err)
		}
		v[i] = float64(n) / clockTick
	}
	return hostTimes{Busy: v[0] + v[1] + v[2] + v[5] + v[6], Steal: v[7], Idle: v[3] + v[4], Total: v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]}, nil
}

// parseSchedstat reads a task's schedstat: the ns it ran and the ns it
// waited runnable on a run queue.
func parseSchedstat(b []byte) (run, wait float64, err error) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("schedstat: %q", b)
	}
	r, err1 := strconv.ParseUint(f[0], 10, 64)
	w, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("schedstat: %q", b)
	}
	return float64(r) / 1e9, float64(w) / 1e9, nil
}

// parseInvoluntary reads nonvoluntary_ctxt_switches from a status file.
func parseInvoluntary(b []byte) uint64 {
	const key = "nonvoluntary_ctxt_switches:"
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	rest := b[i+len(key):]
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, _ := strconv.ParseUint(strings.TrimSpace(string(line)), 10, 64)
	return n
}
