package cpustat

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The processes of a system under test on the agents' host (a broker
// beside the harness) are neither ours nor other work: TrackSystem names them,
// and every sample reads their CPU apart (Sample.SUT), so that "other
// processes" leaves them out.

// MaxTracked bounds the names tracked; maxScanned the /proc entries read
// per sample.
const (
	MaxTracked = 8
	maxScanned = 32768
)

var processName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,15}$`)

// CheckNames refuses what no process name (comm, 15 characters at most)
// can be, and more than MaxTracked names.
func CheckNames(names []string) error {
	if len(names) > MaxTracked {
		return fmt.Errorf("at most %d system-under-test process names, got %d", MaxTracked, len(names))
	}
	for _, n := range names {
		if !processName.MatchString(n) {
			return fmt.Errorf("system-under-test process name %.32q: 1-15 letters, digits, '.', '_' or '-' (the name ps shows)", n)
		}
	}
	return nil
}

// TrackSystem makes every sample read the CPU of the processes with these names
// (this process excluded). Call it before Start.
func (s *Sampler) TrackSystem(names []string) {
	s.mu.Lock()
	s.system = slices.Clone(names)
	s.mu.Unlock()
}

// systemCPU is the CPU seconds of every tracked process now running.
func (s *Sampler) systemCPU(names []string) float64 {
	entries, err := os.ReadDir(s.proc)
	if err != nil {
		return 0
	}
	var sum float64
	for i, e := range entries {
		if i >= maxScanned {
			break
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == s.pid {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("%s/%d/comm", s.proc, pid))
		if err != nil || !slices.Contains(names, strings.TrimSpace(string(comm))) {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", s.proc, pid))
		if err != nil {
			continue // exited meanwhile
		}
		if cpu, err := parseProcessCPU(b); err == nil {
			sum += cpu
		}
	}
	return sum
}
