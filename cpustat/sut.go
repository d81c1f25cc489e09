package cpustat

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
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

// SUTThread is one thread of a tracked process: where it is, and its
// totals.
type SUTThread struct {
	Process string // the process's name (comm)
	PID     int
	Thread  string // the thread's own name (comm of the task): the process's unless it named itself
	Times
}

// maxSUTThreads bounds the threads of tracked processes read per sample.
const maxSUTThreads = 1024

// systemCPU is the CPU seconds of every tracked process now running, and
// its threads' totals by thread id.
func (s *Sampler) systemCPU(names []string) (float64, map[int]SUTThread) {
	entries, err := os.ReadDir(s.proc)
	if err != nil {
		return 0, nil
	}
	threads := map[int]SUTThread{}
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
		s.systemThreads(pid, strings.TrimSpace(string(comm)), threads)
	}
	return sum, threads
}

// systemThreads reads the threads of tracked process pid into into.
func (s *Sampler) systemThreads(pid int, comm string, into map[int]SUTThread) {
	tasks, err := os.ReadDir(fmt.Sprintf("%s/%d/task", s.proc, pid))
	if err != nil {
		return
	}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || len(into) >= maxSUTThreads {
			continue
		}
		dir := fmt.Sprintf("%s/%d/task/%d/", s.proc, pid, tid)
		t, err := s.threadTimes(dir)
		if err != nil {
			continue // exited meanwhile
		}
		name, _ := os.ReadFile(dir + "comm")
		into[tid] = SUTThread{Process: comm, PID: pid, Thread: strings.TrimSpace(string(name)), Times: t}
	}
}

// sutThreadShares are the busiest threads of the tracked processes
// between two samples (a thread absent from a started at zero), at most
// n, busiest first; and each process's cores summed over its threads,
// busiest first.
func sutThreadShares(a, b map[int]SUTThread, wall float64, n int) ([]SUTThreadShare, []SUTProcessShare) {
	var out []SUTThreadShare
	byPID := map[int]*SUTProcessShare{}
	for tid, tb := range b {
		ta := a[tid]
		ts := SUTThreadShare{Process: tb.Process, PID: tb.PID, Thread: tb.Thread, TID: tid,
			Cores: max((tb.CPU-ta.CPU)/wall, 0), Runqueue: max((tb.Runqueue-ta.Runqueue)/wall, 0)}
		out = append(out, ts)
		p := byPID[tb.PID]
		if p == nil {
			p = &SUTProcessShare{Process: tb.Process, PID: tb.PID}
			byPID[tb.PID] = p
		}
		p.Cores += ts.Cores
		p.Runqueue += ts.Runqueue
		if ts.Cores >= 0.05 {
			p.Busy++
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cores != out[j].Cores {
			return out[i].Cores > out[j].Cores
		}
		return out[i].TID < out[j].TID
	})
	procs := make([]SUTProcessShare, 0, len(byPID))
	for _, p := range byPID {
		procs = append(procs, *p)
	}
	sort.Slice(procs, func(i, j int) bool {
		if procs[i].Cores != procs[j].Cores {
			return procs[i].Cores > procs[j].Cores
		}
		return procs[i].PID < procs[j].PID
	})
	return out[:min(len(out), n)], procs
}

// SUTProcessShare is one process of the system under test over a run:
// its cores over all its threads, how many of them used 5% of a core or
// more, and the time its threads waited runnable, added up (thread-
// seconds a second: a process held to a CPU quota, or on a full host,
// waits to run as long as it runs or longer).
type SUTProcessShare struct {
	Process  string  `json:"process"`
	PID      int     `json:"pid"`
	Cores    float64 `json:"cores"`
	Busy     int     `json:"busy_threads"`
	Runqueue float64 `json:"runqueue"`
}

// SUTThreadShare is one thread of the system under test over a run: its
// cores and the share of the time it waited runnable.
type SUTThreadShare struct {
	Process  string  `json:"process"`
	PID      int     `json:"pid"`
	Thread   string  `json:"thread"`
	TID      int     `json:"tid"`
	Cores    float64 `json:"cores"`
	Runqueue float64 `json:"runqueue"`
}

// Name is the thread as a person finds it: the process, and the thread's
// own name where it has one, else its id (top -H shows both).
func (t SUTThreadShare) Name() string {
	if t.Thread != "" && t.Thread != t.Process {
		return fmt.Sprintf("%s: thread %q (%d)", t.Process, t.Thread, t.TID)
	}
	return fmt.Sprintf("%s: thread %d", t.Process, t.TID)
}
