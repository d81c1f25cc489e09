package limits

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/rundir"
)

// GoGC names a Go job's garbage collector as a trial's limit: it runs in
// the operators' goroutines (its assists) and beside them (its workers),
// so it slows every operator a little and saturates none.
const GoGC = "the Go runtime's garbage collection"

// GCLimitShare is the collector's share of a Go job's CPU at and above
// which it is named for a failed trial that no operator limited. YSB on
// the engine at Go's default spent 16-18% there, and at GOGC=5, which
// halved its capacity, 41-49% (BENCHMARKS.md, 2026-11-29).
const GCLimitShare = 0.3

// RuntimeGC names the collector of a job not in Go, seen from outside
// by its threads' names (a JVM's "GC Thread#0", "G1 Conc#0"), as a
// trial's limit.
const RuntimeGC = "the runtime's garbage collection"

// gcThreads are the names a runtime gives its collector's threads (a
// Linux thread's name is at most 15 bytes): the JVM's collectors and
// .NET's.
var gcThreads = []string{"GC Thread", "G1 Conc", "G1 Refine", "G1 Main Marker", "G1 Service", "ZDirector", "ZDriver", "ZWorker",
	"Shenandoah", "Parallel GC", ".NET BGC", ".NET Server GC", ".NET GC"}

// TrialGC names a failed trial's job's garbage collector as its limit
// ("" when it took less than GCLimitShare of the job's CPU): a Go job's
// from its runtime's own accounting, with its share, collections, pauses
// and setting; another runtime's from its collector's threads among the
// system under test's busiest (--sut-process), by their names.
func TrialGC(t *rundir.Trial) (stage, why string) {
	if t.Outcome == nil || t.Verdict.Pass {
		return "", ""
	}
	if why := goGC(t); why != "" {
		return GoGC, why
	}
	if why := threadsGC(t); why != "" {
		return RuntimeGC, why
	}
	return "", ""
}

// threadsGC says which process's collector threads used at least
// GCLimitShare of its cores ("": none): a lower bound, from the busiest
// threads the host accounting keeps.
func threadsGC(t *rundir.Trial) string {
	for _, h := range t.Hosts {
		gc, names := map[int]float64{}, map[int][]string{}
		for _, th := range h.SUTThreads {
			if slices.ContainsFunc(gcThreads, func(p string) bool { return strings.HasPrefix(th.Thread, p) }) {
				gc[th.PID] += th.Cores
				names[th.PID] = append(names[th.PID], fmt.Sprintf("%q", th.Thread))
			}
		}
		for _, p := range h.SUTProcesses {
			if p.Cores > 0 && gc[p.PID] >= GCLimitShare*p.Cores {
				return fmt.Sprintf("%s's collector threads (%s) used %.2f of its %.2f cores, %.0f%% at least",
					p.Process, strings.Join(names[p.PID], ", "), gc[p.PID], p.Cores, 100*gc[p.PID]/p.Cores)
			}
		}
	}
	return ""
}

// goGC says which Go job's collector took at least GCLimitShare of its
// CPU ("": none).
func goGC(t *rundir.Trial) string {
	var why []string
	for _, j := range t.Outcome.Jobs {
		if j == nil || j.GoRuntime.GCShare() < GCLimitShare {
			continue
		}
		g := j.GoRuntime
		setting := fmt.Sprintf("GOGC=%d", g.GOGC)
		if g.GOGC < 0 {
			setting = "GOGC=off"
		}
		why = append(why, fmt.Sprintf("%.0f%% of %s's CPU (%.2f of %.2f s): %d collections, the world stopped %v in all; %s",
			100*g.GCShare(), j.Name, g.GCCPUSeconds, g.CPUSeconds, g.GCCycles,
			time.Duration(g.GCPauseSeconds*1e9).Round(10*time.Microsecond), setting))
	}
	return strings.Join(why, "; ")
}
