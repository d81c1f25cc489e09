package cpustat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"nats-server", "redis-server"}, true},
		{[]string{"cpsweep"}, true},
		{nil, true},
		{[]string{"a-name-far-too-long-for-comm"}, false},
		{[]string{"../etc"}, false},
		{[]string{""}, false},
		{[]string{"a b"}, false},
		{strings.Split("a,b,c,d,e,f,g,h,i", ","), false},
	} {
		if err := CheckNames(tc.names); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.names, err)
		}
	}
}

// TestWatchedProcessesAreTheSystemsNotOthers: the watched processes' CPU
// is summed from /proc (this process and other names left out), and the
// summary takes it out of "other processes".
func TestWatchedProcessesAreTheSystemsNotOthers(t *testing.T) {
	dir := t.TempDir()
	proc := func(pid int, comm string, ticks int) {
		d := filepath.Join(dir, fmt.Sprint(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "comm"), []byte(comm+"\n"), 0o644)
		// pid (comm) state ppid ... utime (14th) stime (15th)
		os.WriteFile(filepath.Join(d, "stat"), []byte(fmt.Sprintf("%d (%s) S 1 1 1 0 -1 0 0 0 0 0 %d %d 0 0 20 0 1 0", pid, comm, ticks, ticks)), 0o644)
	}
	task := func(pid, tid int, comm string, runNs, waitNs int64) {
		d := filepath.Join(dir, fmt.Sprint(pid), "task", fmt.Sprint(tid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "comm"), []byte(comm+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "schedstat"), []byte(fmt.Sprintf("%d %d 1\n", runNs, waitNs)), 0o644)
	}
	proc(10, "nats-server", 100) // 2 s of CPU at 100 ticks/s
	task(10, 10, "nats-server", 1.5e9, 0)
	task(10, 13, "nats-server", 0.5e9, 0.2e9)
	proc(11, "nats-server", 50) // 1 s
	task(11, 11, "worker", 1e9, 0)
	proc(12, "bash", 1000)
	task(12, 12, "bash", 10e9, 0)
	proc(99, "nats-server", 1000) // this process: never the system's
	s := &Sampler{names: map[int]string{}, proc: dir, pid: 99}
	s.TrackSystem([]string{"nats-server"})
	got, threads := s.systemCPU(s.system)
	if got < 2.99 || got > 3.01 {
		t.Errorf("watched CPU %.2f s, want 3 (pids 10 and 11)", got)
	}
	if len(threads) != 3 || threads[13].PID != 10 || threads[13].Runqueue != 0.2 || threads[11].Thread != "worker" || threads[11].Process != "nats-server" {
		t.Errorf("the watched threads: %+v", threads)
	}
	busiest, procs := sutThreadShares(map[int]SUTThread{10: {Times: Times{CPU: 1}}}, threads, 2, 2)
	if len(procs) != 2 || procs[0].PID != 10 || procs[0].Cores != 0.5 || procs[0].Busy != 2 || procs[1].PID != 11 || procs[1].Cores != 0.5 {
		t.Errorf("the processes over 2 s: %+v", procs)
	}
	if len(busiest) != 2 || busiest[0].TID != 11 || busiest[0].Cores != 0.5 || busiest[1].TID != 10 || busiest[1].Name() != "nats-server: thread 10" ||
		busiest[0].Name() != `nats-server: thread "worker" (11)` {
		t.Errorf("the busiest over 2 s: %+v", busiest)
	}
	a := Sample{UnixNs: 0, HostBusy: 0, HostTotal: 20, Process: 0, SUT: 3}
	b := Sample{UnixNs: 10e9, HostBusy: 10, HostTotal: 40, Process: 2, SUT: 8}
	sum := Summarize(a, b, 2)
	// busy 10/20 = 50%; ours 0.2 cores, the system's 0.5: others 50% - 35% = 15%
	if sum.SUT < 0.49 || sum.SUT > 0.51 || sum.OtherProcesses < 0.14 || sum.OtherProcesses > 0.16 {
		t.Errorf("summary %+v: want the system's 0.5 cores out of other processes (0.15)", sum)
	}
}

// TestAThreadNamedBetweenReadsCountsFromTheFirstReadThatSeesIt: a Go
// thread that started, ran other goroutines and took the profiler's name
// between two Reads brings none of that into the role; a libzmq thread
// (named as it starts) counts from its start.
func TestAThreadNamedBetweenReadsCountsFromTheFirstReadThatSeesIt(t *testing.T) {
	dir := t.TempDir()
	write := func(path, text string) {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	thread := func(tid int, comm string, cpuNs int64) {
		write(fmt.Sprintf("99/task/%d/comm", tid), comm+"\n")
		write(fmt.Sprintf("99/task/%d/schedstat", tid), fmt.Sprintf("%d 0 1\n", cpuNs))
		write(fmt.Sprintf("99/task/%d/status", tid), "nonvoluntary_ctxt_switches:\t0\n")
	}
	write("stat", "cpu 1 0 0 1 0 0 0 0 0 0\n")
	write("99/stat", "99 (t) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0")
	s := &Sampler{names: map[int]string{}, base: map[int]Times{}, proc: dir, pid: 99}
	read := func() Sample {
		out, err := s.Read()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	thread(1, "t", 1e9)
	read()
	thread(2, ProfilerThread, 2e8) // 0.2 s of CPU before the Read that sees it
	thread(3, "ZMQbg/IO/0", 2e8)
	b := read()
	thread(2, ProfilerThread, 3e8)
	thread(3, "ZMQbg/IO/0", 3e8)
	c := read()
	for _, tc := range []struct {
		role    string
		atFirst float64
		atLast  float64
	}{
		{Profiler, 0, 0.1},
		{ZMQIO, 0.2, 0.3},
	} {
		if got := b.Threads[tc.role].CPU; got < tc.atFirst-1e-9 || got > tc.atFirst+1e-9 {
			t.Errorf("%s at the first Read that sees it: %.3f s, want %.3f", tc.role, got, tc.atFirst)
		}
		if got := c.Threads[tc.role].CPU; got < tc.atLast-1e-9 || got > tc.atLast+1e-9 {
			t.Errorf("%s a Read later: %.3f s, want %.3f", tc.role, got, tc.atLast)
		}
	}
}
