package cpustat

import (
	"math"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/cloudprofiler-go/cp/profiler"

	"golang.org/x/sys/unix"
)

func TestParsers(t *testing.T) {
	near := func(x, want float64) bool { return x > want-1e-6 && x < want+1e-6 }
	h, err := parseHostStat([]byte("cpu  203252 809 111544 454581 1051 0 5525 369 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if err != nil || !near(h.Busy, (203252+809+111544+0+5525)/100.0) || !near(h.Steal, 3.69) || !near(h.Idle, (454581+1051)/100.0) {
		t.Fatalf("host: %+v %v", h, err)
	}
	if _, err := parseHostStat([]byte("intr 1 2 3\n")); err == nil {
		t.Fatal("a /proc/stat without its cpu line was read")
	}
	run, wait, err := parseSchedstat([]byte("92046000 63640000 3\n"))
	if err != nil || !near(run, 0.092046) || !near(wait, 0.06364) {
		t.Fatalf("schedstat: %v %v %v", run, wait, err)
	}
	if n := parseInvoluntary([]byte("voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t54\n")); n != 54 {
		t.Fatalf("involuntary: %d", n)
	}
	cpu, err := parseProcessCPU([]byte("24245 (a (weird) name) R 24243 24243 1099 0 -1 4194304 132 0 0 0 250 50 0 0 20 0 1 0 409921"))
	if err != nil || cpu != 3 {
		t.Fatalf("process: %v %v", cpu, err)
	}
}

func TestSummarize(t *testing.T) {
	a := Sample{UnixNs: 0, HostBusy: 10, HostSteal: 1, HostTotal: 20, Process: 2, Threads: map[string]Times{"thread0": {CPU: 1, Runqueue: 0.1, Involuntary: 5}}}
	b := Sample{UnixNs: 2e9, HostBusy: 13, HostSteal: 1.2, HostTotal: 24, Process: 3.5, Threads: map[string]Times{"thread0": {CPU: 2.8, Runqueue: 0.3, Involuntary: 9}, Other: {CPU: 0.1}}}
	s := Summarize(a, b, 2)
	near := func(x, want float64) bool { return x > want-1e-9 && x < want+1e-9 }
	if !near(s.HostBusy, 0.75) || !near(s.HostSteal, 0.05) || !near(s.OtherProcesses, 0.375) || !near(s.Process, 0.75) {
		t.Fatalf("summary: %+v", s)
	}
	if len(s.Threads) != 2 || s.Threads[0].Name != "thread0" || !near(s.Threads[0].Cores, 0.9) || !near(s.Threads[0].Runqueue, 0.1) || s.Threads[0].Involuntary != 4 {
		t.Fatalf("threads: %+v", s.Threads)
	}
}

// TestMeasuresARealSpinnerAndANeighbour: a registered spinning thread shows
// as most of a core, and a busy process next to us as other processes'
// CPU (generous bounds: the host is shared).
func TestMeasuresARealSpinnerAndANeighbour(t *testing.T) {
	s := New()
	if _, err := s.Read(); err != nil {
		t.Skipf("no host accounting here: %v", err)
	}
	var stop atomic.Bool
	go func() {
		runtime.LockOSThread()
		s.Register("spin")
		for !stop.Load() {
		}
	}()
	neighbour := exec.Command("sh", "-c", "end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do :; done")
	if err := neighbour.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = neighbour.Process.Kill(); _ = neighbour.Wait() }()
	time.Sleep(50 * time.Millisecond)
	r := s.Start(20 * time.Millisecond)
	time.Sleep(600 * time.Millisecond)
	rec := r.Stop()
	stop.Store(true)
	if rec.Error != "" || len(rec.Samples) < 10 {
		t.Fatalf("record: %d samples, %q", len(rec.Samples), rec.Error)
	}
	sum := rec.Summary
	var spin ThreadShare
	for _, th := range sum.Threads {
		if th.Name == "spin" {
			spin = th
		}
	}
	if spin.Cores < 0.1 || sum.Process < 0.1 || sum.OtherProcesses < 0.05 || sum.HostBusy < 0.3 {
		t.Fatalf("a spinner and a busy neighbour: %+v", sum)
	}
	t.Logf("spinner %.2f cores (runqueue %.2f), process %.2f, others %.2f, host busy %.2f, steal %.3f", spin.Cores, spin.Runqueue, sum.Process, sum.OtherProcesses, sum.HostBusy, sum.HostSteal)
}

// TestRecordStaysBounded: past MaxSamples the series thins out instead of
// growing.
func TestRecordStaysBounded(t *testing.T) {
	s := New()
	if _, err := s.Read(); err != nil {
		t.Skipf("no host accounting here: %v", err)
	}
	r := &Recorder{s: s, period: time.Millisecond, every: 1, stop: make(chan struct{}), done: make(chan struct{})}
	for i := 0; i < MaxSamples+10; i++ {
		r.rec.Samples = append(r.rec.Samples, Sample{UnixNs: int64(i)})
	}
	r.take()
	go r.loop()
	time.Sleep(30 * time.Millisecond)
	rec := r.Stop()
	if len(rec.Samples) > MaxSamples+2 || rec.PeriodNs < 2*time.Millisecond.Nanoseconds() {
		t.Fatalf("%d samples, period %d ns", len(rec.Samples), rec.PeriodNs)
	}
}

// TestSeriesKeepsThreadsThatEnded: a role that is in the middle samples
// but not the last (its thread ended) keeps what it used; one that
// appeared after the first counts from zero.
func TestSeriesKeepsThreadsThatEnded(t *testing.T) {
	series := []Sample{
		{UnixNs: 0, Process: 0, Threads: map[string]Times{Other: {CPU: 1}, ZMQIO: {CPU: 0.5}}},
		{UnixNs: 1e9, Process: 1, Threads: map[string]Times{Other: {CPU: 1.1}, ZMQIO: {CPU: 0.7}, "thread0": {CPU: 0.6}}},
		{UnixNs: 2e9, Process: 2, Threads: map[string]Times{Other: {CPU: 1.2}}},
	}
	s := SummarizeSeries(series, 2)
	got := map[string]float64{}
	for _, th := range s.Threads {
		got[th.Name] = th.Cores
	}
	near := func(x, want float64) bool { return x > want-1e-9 && x < want+1e-9 }
	if !near(got["thread0"], 0.3) || !near(got[ZMQIO], 0.1) || !near(got[Other], 0.1) || !near(s.Process, 1) {
		t.Fatalf("%+v", s.Threads)
	}
}

// TestRegisteredThreadCountsFromItsRegistration: a goroutine that locks
// an OS thread Go used before (here: one that spun 300 ms first) counts
// only what the thread does in its role, after Register; a summary once
// showed an emission thread at more cores than its process.
func TestRegisteredThreadCountsFromItsRegistration(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("per-thread accounting is Linux's")
	}
	s := New()
	a, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// spin for d of the thread's own CPU time: a busy host that
		// preempts it must not shorten its work in the role
		spin := func(d time.Duration) {
			cpu := func() time.Duration {
				var ts unix.Timespec
				_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
				return time.Duration(ts.Nano())
			}
			for end := cpu() + d; cpu() < end; {
			}
		}
		spin(300 * time.Millisecond) // the thread's earlier life
		s.Register("thread0")
		spin(100 * time.Millisecond) // its work in the role
	}()
	<-done
	b, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	cpu := b.Threads["thread0"].CPU - a.Threads["thread0"].CPU
	if cpu < 0.05 || cpu > 0.2 {
		t.Errorf("thread0 used %.3f s of CPU in its role, want about 0.1 (not the 0.4 of the thread's life)", cpu)
	}
}

// TestProfilerThreadNameIsTheProfilers: the name counted here is the one
// the profiler gives its threads.
func TestProfilerThreadNameIsTheProfilers(t *testing.T) {
	if ProfilerThread != profiler.ThreadName {
		t.Fatalf("cpustat counts %q, the profiler names its threads %q", ProfilerThread, profiler.ThreadName)
	}
}

// TestProfilerThreadsAreTheirOwnRole: a thread named ProfilerThread (as
// the profiler's workers name theirs) is counted as Profiler, not Other,
// while it lives, from the first reading that sees the name: a Go thread
// that ran other goroutines before (here: spun 200 ms) does not bring
// that earlier life into the role.
func TestProfilerThreadsAreTheirOwnRole(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("per-thread accounting is Linux's")
	}
	s := New()
	// An earlier test's named thread may remain (Go keeps the main thread
	// when a goroutine locked to it exits), so the role is read as deltas.
	p0, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	spin := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	named, start, spun, read := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the named thread retires with the goroutine
		spin(200 * time.Millisecond)
		name := append([]byte(ProfilerThread), 0)
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); err != nil {
			t.Error(err)
		}
		close(named)
		<-start
		// 100 ms of this thread's CPU, not of the wall clock: on a busy
		// host (the race tests of other packages beside this one) a wall
		// clock spin got 44 ms of CPU and 60 ms in the run queue
		spinCPU(t, 100*time.Millisecond)
		close(spun)
		<-read
	}()
	<-named
	a, err := s.Read()
	close(start)
	if err != nil {
		t.Fatal(err)
	}
	<-spun
	b, err := s.Read()
	close(read)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Threads[Profiler]; !ok {
		t.Fatalf("no %s role among %+v", Profiler, b.Threads)
	}
	if cpu := b.Threads[Profiler].CPU - a.Threads[Profiler].CPU; cpu < 0.05 || cpu > 0.2 {
		t.Errorf("the profiler's role used %.3f s, want about 0.1 (threads: %+v)", cpu, b.Threads)
	}
	if before := a.Threads[Profiler].CPU - p0.Threads[Profiler].CPU; before > 0.05 {
		t.Errorf("the role starts with %.3f s of the thread's earlier life", before)
	}
}

// spinCPU spins until the calling (locked) thread has used d of CPU.
func spinCPU(t *testing.T, d time.Duration) {
	used := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Error(err)
			return d
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for end := used() + d; used() < end; {
	}
}

func TestProfilerCost(t *testing.T) {
	prof := func(process, cores float64) Summary {
		return Summary{Process: process, Threads: []ThreadShare{{Name: "thread0", Cores: process - cores}, {Name: Profiler, Cores: cores}}}
	}
	cases := []struct {
		name         string
		sums         []Summary
		cores, share float64
		ok           bool
	}{
		{"none", nil, 0, 0, false},
		{"not profiled", []Summary{{Process: 1, Threads: []ThreadShare{{Name: "thread0", Cores: 1}}}}, 0, 0, false},
		{"one agent", []Summary{prof(0.5, 0.01)}, 0.01, 0.02, true},
		{"two agents, summed", []Summary{prof(0.6, 0.012), prof(0.4, 0.008)}, 0.02, 0.02, true},
		{"idle workers still say they were there", []Summary{prof(0.5, 0)}, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cores, share, ok := ProfilerCost(c.sums)
			if ok != c.ok || math.Abs(cores-c.cores) > 1e-12 || math.Abs(share-c.share) > 1e-12 {
				t.Fatalf("got %.4f cores, share %.4f, ok %v; want %.4f, %.4f, %v", cores, share, ok, c.cores, c.share, c.ok)
			}
		})
	}
}
