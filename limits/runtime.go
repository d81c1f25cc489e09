package limits

import (
	"fmt"
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

// TrialGC says why a failed trial's job was limited by its Go runtime's
// collector ("": no job of the trial said its runtime, or its collector
// took less than GCLimitShare of its CPU): its share, its collections
// and pauses, and its setting.
func TrialGC(t *rundir.Trial) string {
	if t.Outcome == nil || t.Verdict.Pass {
		return ""
	}
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
