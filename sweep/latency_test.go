package sweep

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
)

func TestAnswerLatency(t *testing.T) {
	run := func(rate float64, pass bool, p50, p99 int64) rundir.Trial {
		return rundir.Trial{Rate: rate, Verdict: rundir.Verdict{Pass: pass}, Outcome: &rundir.Outcome{Receivers: []*tally.Result{
			{Latency: histo.Summary{Count: 10, P50: p50, P99: p99}}, {Latency: histo.Summary{Count: 10, P50: p50 / 2, P99: p99 / 2}}}}}
	}
	res := &rundir.Result{LastPass: 1e6, Trials: []rundir.Trial{run(5e5, true, 1, 1), run(1e6, true, 1000, 5000), run(2e6, false, 1e9, 1e9), run(1e6, true, 3000, 4000), run(1e6, false, 1e8, 1e8)}}
	one := []protocol.AgentInfo{{Machine: "m"}, {Machine: "m"}}
	two := []protocol.AgentInfo{{Machine: "m"}, {Machine: "n"}}
	a := answerLatency(res, one)
	if a == nil || a.Runs != 2 || a.P50Ns != 3000 || a.P99Ns != 5000 || a.ClockBoundNs != 0 {
		t.Fatalf("one machine: %+v, want the worst of the 2 passing runs at the answer and no clock error", a)
	}
	if a.BestP50Ns != 1000 || a.BestP99Ns != 4000 { // each run's worst receiver's, the lower of the two runs
		t.Errorf("the best run's: p50 %d, p99 %d; want 1000 and 4000", a.BestP50Ns, a.BestP99Ns)
	}
	single := &rundir.Result{LastPass: 1e6, Trials: []rundir.Trial{run(1e6, true, 1000, 5000)}}
	if s := answerLatency(single, one); s == nil || s.BestP50Ns != 0 || s.BestP99Ns != 0 {
		t.Errorf("one run: %+v: it shows no spread", s)
	}
	if s := a.Statement(); !strings.Contains(s, "2 run(s)") || !strings.Contains(s, "one clock") {
		t.Errorf("statement %q", s)
	}
	if b := answerLatency(res, two); b == nil || b.ClockBoundNs != -1 || !strings.Contains(b.Statement(), "not bounded") {
		t.Errorf("two machines: %+v: the clock error must be said to be unbounded", b)
	}
	if answerLatency(&rundir.Result{FirstFail: 1e6}, one) != nil {
		t.Error("a latency without an answer")
	}
}
