package cpustat

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Names of the threads a sampler did not register.
const (
	ZMQIO     = "zmq-io"     // libzmq's I/O threads (ZMQbg/IO/N), summed
	ZMQReaper = "zmq-reaper" // libzmq's reaper (ZMQbg/Reaper)
	Other     = "other"      // the Go runtime and every other thread, summed
	// Profiler is the profiler's compression and writing workers, summed:
	// they name their threads ProfilerThread (package profiler), so that
	// a profiled run shows what its logging costs beside its stages.
	Profiler = "profiler"
)

// ProfilerThread is the kernel name (comm) of the profiler's worker
// threads (profiler.ThreadName; a test keeps the two equal without this
// package linking the profiler).
const ProfilerThread = "cp-profiler"

// Sampler reads the process's threads and the host. Register is called by
// the hot threads themselves; Read by a sampling goroutine.
type Sampler struct {
	mu    sync.Mutex
	names map[int]string // thread id -> role
	// base is a registered thread's counters when it was registered: a
	// locked goroutine runs on an OS thread that may have worked for
	// earlier runs (Go reuses its threads), and only what it does in its
	// role counts.
	base map[int]Times
	// seen is every thread's role at the latest Read: a thread named after
	// it started (the profiler's workers name the Go thread they locked,
	// which may have run other goroutines before) counts in its new role
	// from the first Read that sees the name, not with its earlier life;
	// so does a thread that started and took its name between two Reads.
	seen   map[int]string
	proc   string // /proc
	pid    int
	system []string // the system under test's process names (TrackSystem)
}

// New returns a sampler of this process.
func New() *Sampler {
	return &Sampler{names: map[int]string{}, base: map[int]Times{}, proc: "/proc", pid: os.Getpid()}
}

// Register names the calling OS thread (it must be locked to it:
// runtime.LockOSThread) as role, e.g. "thread0", "lane1", "consumer".
func (s *Sampler) Register(role string) {
	if s == nil || runtime.GOOS != "linux" {
		return
	}
	tid := unix.Gettid()
	base, _ := s.threadTimes(fmt.Sprintf("%s/%d/task/%d/", s.proc, s.pid, tid))
	s.mu.Lock()
	s.names[tid] = role
	s.base[tid] = base
	s.mu.Unlock()
}

// threadTimes reads one thread's counters from its /proc task folder.
func (s *Sampler) threadTimes(dir string) (Times, error) {
	sched, err := os.ReadFile(dir + "schedstat")
	if err != nil {
		return Times{}, err // exited meanwhile
	}
	run, wait, err := parseSchedstat(sched)
	if err != nil {
		return Times{}, err
	}
	status, _ := os.ReadFile(dir + "status")
	return Times{CPU: run, Runqueue: wait, Involuntary: parseInvoluntary(status)}, nil
}

// Times are one thread's (or role's) totals since it started.
type Times struct {
	CPU      float64 `json:"cpu_s"`      // ran on a CPU
	Runqueue float64 `json:"runqueue_s"` // runnable, waiting for a CPU
	// Involuntary counts the times the scheduler took its CPU away.
	Involuntary uint64 `json:"involuntary_switches"`
}

// Sample is one reading: cumulative totals at UnixNs.
type Sample struct {
	UnixNs int64 `json:"t_unix_ns"`
	// Host is every CPU's time since boot, summed (s): busy (user, system,
	// interrupts), stolen by the hypervisor, idle (with I/O wait).
	HostBusy  float64 `json:"host_busy_s"`
	HostSteal float64 `json:"host_steal_s"`
	HostIdle  float64 `json:"host_idle_s"`
	// HostTotal is all of these: on a tickless kernel it falls short of
	// the wall time × CPUs (ticks of idle CPUs are not counted), so the
	// shares are taken of it, not of the wall time.
	HostTotal float64 `json:"host_total_s"`
	// Process is this process's CPU since it started (every thread, those
	// that exited included).
	Process float64 `json:"process_s"`
	// SUT is the CPU of the tracked processes (the system under test's
	// on this host, TrackSystem) since they started.
	SUT     float64          `json:"sut_s,omitempty"`
	Threads map[string]Times `json:"threads"`
	// SUTThreads are the tracked processes' threads by id (in memory
	// only: the summary keeps the busiest).
	SUTThreads map[int]SUTThread `json:"-"`
}

// Read takes a sample.
func (s *Sampler) Read() (Sample, error) {
	out := Sample{UnixNs: time.Now().UnixNano(), Threads: map[string]Times{}}
	b, err := os.ReadFile(s.proc + "/stat")
	if err != nil {
		return out, ErrUnsupported
	}
	h, err := parseHostStat(b)
	if err != nil {
		return out, err
	}
	out.HostBusy, out.HostSteal, out.HostIdle, out.HostTotal = h.Busy, h.Steal, h.Idle, h.Total
	if b, err = os.ReadFile(fmt.Sprintf("%s/%d/stat", s.proc, s.pid)); err != nil {
		return out, ErrUnsupported
	}
	if out.Process, err = parseProcessCPU(b); err != nil {
		return out, err
	}
	s.mu.Lock()
	system := s.system
	s.mu.Unlock()
	if len(system) > 0 {
		out.SUT, out.SUTThreads = s.systemCPU(system)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("%s/%d/task", s.proc, s.pid))
	if err != nil {
		return out, ErrUnsupported
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[int]string, len(tasks))
	defer func() { s.forgetEnded(seen) }()
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := fmt.Sprintf("%s/%d/task/%d/", s.proc, s.pid, tid)
		now, err := s.threadTimes(dir)
		if err != nil {
			continue // exited meanwhile
		}
		name := s.roleOf(tid, dir)
		if _, registered := s.names[tid]; !registered && s.seen != nil {
			prev, ok := s.seen[tid]
			switch {
			case ok && prev != name:
				s.base[tid] = now // renamed since the last Read
			case !ok && name == Profiler:
				// A Go thread started and named since the last Read:
				// when it took the name is unknown, and it may have run
				// other goroutines first, so its role counts from here.
				// (libzmq's threads are named as they start: no earlier
				// life.)
				s.base[tid] = now
			}
		}
		seen[tid] = name
		base := s.base[tid] // zero unless registered or renamed: then, since
		t := out.Threads[name]
		t.CPU += max(now.CPU-base.CPU, 0)
		t.Runqueue += max(now.Runqueue-base.Runqueue, 0)
		if now.Involuntary >= base.Involuntary {
			t.Involuntary += now.Involuntary - base.Involuntary
		}
		out.Threads[name] = t
	}
	return out, nil
}

// forgetEnded keeps the roles of the threads of this Read, and drops the
// baselines of unregistered threads that ended (s.mu is held).
func (s *Sampler) forgetEnded(seen map[int]string) {
	s.seen = seen
	for tid := range s.base {
		if _, registered := s.names[tid]; !registered {
			if _, alive := seen[tid]; !alive {
				delete(s.base, tid)
			}
		}
	}
}

// roleOf names a thread: registered, libzmq's by its name, or Other.
func (s *Sampler) roleOf(tid int, dir string) string {
	if name, ok := s.names[tid]; ok {
		return name
	}
	comm, _ := os.ReadFile(dir + "comm")
	switch c := strings.TrimSpace(string(comm)); {
	case strings.HasPrefix(c, "ZMQbg/IO"):
		return ZMQIO
	case strings.HasPrefix(c, "ZMQbg/Reaper"):
		return ZMQReaper
	case c == ProfilerThread:
		return Profiler
	}
	return Other
}

// parseProcessCPU reads utime + stime of a /proc/PID/stat.
func parseProcessCPU(b []byte) (float64, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields", len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat: utime %q stime %q", f[11], f[12])
	}
	return float64(u+st) / clockTick, nil
}

// Summary is what happened between two samples, as shares of the wall
// time between them.
type Summary struct {
	Seconds float64 `json:"seconds"`
	CPUs    int     `json:"cpus"`
	// HostBusy, HostSteal and OtherProcesses are shares of every CPU's
	// time (0..1): busy, stolen, and busy in processes other than this one.
	HostBusy       float64 `json:"host_busy"`
	HostSteal      float64 `json:"host_steal"`
	OtherProcesses float64 `json:"other_processes"`
	// Process is the cores this process used (CPU seconds / s).
	Process float64 `json:"process_cores"`
	// SUT is the cores the tracked processes used (the system under
	// test's on this host); OtherProcesses leaves them out.
	SUT float64 `json:"sut_cores,omitempty"`
	// Threads, by role, busiest first: cores used, the share of the time
	// they waited runnable, and involuntary switches.
	Threads []ThreadShare `json:"threads"`
	// SUTThreads are the system under test's busiest threads on this host
	// (at most MaxSUTThreadShares), busiest first.
	SUTThreads []SUTThreadShare `json:"sut_threads,omitempty"`
	// SUTProcesses are its processes on this host, busiest first.
	SUTProcesses []SUTProcessShare `json:"sut_processes,omitempty"`
}

// MaxSUTThreadShares is how many of the system under test's threads a
// summary keeps.
const MaxSUTThreadShares = 4

// ThreadShare is one role's part of a Summary.
type ThreadShare struct {
	Name  string  `json:"name"`
	Cores float64 `json:"cores"`
	// Runqueue is the time spent runnable but not running, per second of
	// wall time (summed over the role's threads: above 1 for several).
	Runqueue    float64 `json:"runqueue"`
	Involuntary uint64  `json:"involuntary_switches"`
}

// Summarize compares two samples of the same process (b after a).
func Summarize(a, b Sample, cpus int) Summary {
	wall := float64(b.UnixNs-a.UnixNs) / 1e9
	out := Summary{Seconds: wall, CPUs: cpus}
	if wall <= 0 || cpus <= 0 {
		return out
	}
	// The host's shares are of its own total (tick-sampled), ours of the
	// wall time (exact): others are what the host's busy share leaves.
	total := b.HostTotal - a.HostTotal
	if total <= 0 {
		total = wall * float64(cpus)
	}
	out.HostBusy = clamp01((b.HostBusy - a.HostBusy) / total)
	out.HostSteal = clamp01((b.HostSteal - a.HostSteal) / total)
	ours := b.Process - a.Process
	out.Process = max(ours/wall, 0)
	out.SUT = max((b.SUT-a.SUT)/wall, 0)
	out.OtherProcesses = clamp01(out.HostBusy - (out.Process+out.SUT)/float64(cpus))
	if len(b.SUTThreads) > 0 {
		out.SUTThreads, out.SUTProcesses = sutThreadShares(a.SUTThreads, b.SUTThreads, wall, MaxSUTThreadShares)
	}
	for name, tb := range b.Threads {
		ta := a.Threads[name]
		ts := ThreadShare{Name: name, Cores: max((tb.CPU-ta.CPU)/wall, 0), Runqueue: max((tb.Runqueue-ta.Runqueue)/wall, 0)}
		if tb.Involuntary >= ta.Involuntary {
			ts.Involuntary = tb.Involuntary - ta.Involuntary
		}
		out.Threads = append(out.Threads, ts)
	}
	sort.Slice(out.Threads, func(i, j int) bool {
		if out.Threads[i].Cores != out.Threads[j].Cores {
			return out.Threads[i].Cores > out.Threads[j].Cores
		}
		return out.Threads[i].Name < out.Threads[j].Name
	})
	return out
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }

// ProfilerCost is what the profiler's own threads (its compression and
// writing workers, the Profiler role) used over some processes' summaries
// of one period, summed: cores, and their share of those processes' CPU.
// ok is false when no summary names them (not profiled, or no per-thread
// accounting). The logging calls on the stages' threads are inside those
// stages' CPU, not in it (docs/profiler.md gives their cost per call).
func ProfilerCost(sums []Summary) (cores, share float64, ok bool) {
	var process float64
	for _, s := range sums {
		process += s.Process
		for _, th := range s.Threads {
			if th.Name == Profiler {
				cores, ok = cores+th.Cores, true
			}
		}
	}
	if process > 0 {
		share = cores / process
	}
	return cores, share, ok
}
