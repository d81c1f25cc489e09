package sweep

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/sweep/search"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
)

// A trial its host disturbed is repeated, never judged, and kept in the
// trial it was repeated for; a host that stays disturbed ends the sweep
// without an answer, saying by what (ExitDisturbed).
func TestDisturbedTrialsAreRepeated(t *testing.T) {
	for _, c := range []struct {
		behave   string
		wantExit int
	}{{"busyonce", ExitAnswer}, {"busy", ExitDisturbed}} {
		recv, send := newFake(t, protocol.RoleReceiver, "ok"), newFake(t, protocol.RoleSender, c.behave)
		var log bytes.Buffer
		s := &Sweep{Ctrl: &Controller{Senders: []*remote.Agent{send.client()}, Receivers: []*remote.Agent{recv.client()}, Plan: testPlan(t), AgentTimeout: time.Second},
			Search: Search{Method: "linear", Linear: search.LinearPlan{From: 1000, To: 2000, Step: 1000}}, Name: "disturbed", Results: t.TempDir(),
			Log: &log, Host: verdict.HostRules{MaxOthers: 0.15, MaxRepeats: 2}}
		report, err := s.Execute(context.Background())
		if got := ExitCode(report, err); got != c.wantExit {
			t.Fatalf("%s: exit %d (%v), want %d\n%s", c.behave, got, err, c.wantExit, log.String())
		}
		var text bytes.Buffer
		WriteText(&text, report)
		switch c.behave {
		case "busyonce":
			tr := report.Result.Trials
			if len(tr) != 2 || len(tr[0].Disturbed) != 1 || !strings.Contains(tr[0].Disturbed[0].Reason, "other processes used 85%") || send.started != 3 {
				t.Fatalf("busyonce: %d trials, %d agent runs: %+v", len(tr), send.started, tr)
			}
			if !strings.Contains(log.String(), "DISTURBED: other processes used 85%") || !strings.Contains(text.String(), "disturbed: 1 run(s) repeated") {
				t.Fatalf("busyonce: the repeat is not said:\n%s\n%s", log.String(), text.String())
			}
		case "busy":
			if send.started != 3 || !strings.Contains(report.Disturbed, "every one disturbed") || strings.Contains(text.String(), "max sustainable throughput") ||
				!strings.Contains(text.String(), "no answer: the host stayed disturbed") {
				t.Fatalf("busy: %d runs, report %q\n%s", send.started, report.Disturbed, text.String())
			}
		}
	}
}
