package diagnose

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

// ysbThread is YSB's job with its filter and join on one pipeline thread
// (thread "" leaves them each on its own): ysb/input -> ysb/filter ->
// ysb/join -> ysb/window.
func ysbThread(t testing.TB, thread string) *Bottlenecks {
	g, err := NewGraph([]Module{
		{Name: "ysb/input", Kind: stage.Operator, HasWait: true},
		{Name: "ysb/filter", Kind: stage.Operator, HasWait: true, Thread: thread},
		{Name: "ysb/join", Kind: stage.Operator, HasWait: true, Thread: thread},
		{Name: "ysb/window", Kind: stage.Operator, HasWait: true},
	}, [][2]int{{0, 1}, {1, 2}, {2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	return NewBottlenecks(g, []bool{true, true, true, true}, DefaultThresholds)
}

// TestSharedThread: operators on one thread are judged by the thread
// their busy times add up on, and named with their shares, or alone
// when one of them is most of it (issue 58: the filter 47% and the join
// 49% of one thread named nothing).
func TestSharedThread(t *testing.T) {
	const thread = "ysb/pipeline thread 0"
	cases := []struct {
		name           string
		thread         string
		act            []Activity
		stage, evident string
	}{
		{"the thread of two operators", thread,
			[]Activity{timed(0.03, 0.96), timed(0.47, 0.50), timed(0.50, 0.02), timed(0.1, 0)},
			thread, "ysb/pipeline thread 0: ysb/filter 47%, ysb/join 50% (busy 97%), ysb/input blocked 96%"},
		{"full without pressure", thread, // saturated: work waits by definition
			[]Activity{timed(0.03, 0.01), timed(0.48, 0.49), timed(0.49, 0), timed(0.1, 0)},
			thread, "ysb/pipeline thread 0: ysb/filter 48%, ysb/join 49% (busy 97%), ysb/input blocked 1%"},
		{"one operator most of it", thread,
			[]Activity{timed(0.05, 0.9), timed(0.06, 0.85), timed(0.88, 0), timed(0.1, 0)},
			"ysb/join", "ysb/join: busy 88%, on ysb/pipeline thread 0 with ysb/filter 6%, ysb/input blocked 90%"},
		{"busy but keeping up", thread, // 85%, but nothing off the thread waits for it
			[]Activity{timed(0.1, 0.01), timed(0.40, 0.45), timed(0.45, 0), timed(0.1, 0)},
			"", ""},
		{"half busy", thread,
			[]Activity{timed(0.1, 0.3), timed(0.25, 0.25), timed(0.25, 0), timed(0.1, 0)},
			"", ""},
		// Not declared: each operator alone is only half busy, and the
		// stage before the join is blocked only while the join works:
		// nothing is named, as before threads were said (issue 58).
		{"undeclared", "",
			[]Activity{timed(0.03, 0.96), timed(0.47, 0.50), timed(0.50, 0.02), timed(0.1, 0)},
			"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Ranking
			ysbThread(t, tc.thread).Rank(tc.act, &r)
			if r.Stage != tc.stage || r.Evidence != tc.evident {
				t.Fatalf("limiting %q (%q), want %q (%q); ranks %v", r.Stage, r.Evidence, tc.stage, tc.evident, r.Rank)
			}
		})
	}
}

// Two saturated stages within two points of each other are a tie, said
// in the evidence; one clearly busier is named alone.
func TestASaturatedTie(t *testing.T) {
	b := ysbThread(t, "")
	var r Ranking
	b.Rank([]Activity{timed(0.1, 0.9), timed(0.1, 0.85), timed(0.97, 0.02), timed(0.96, 0)}, &r)
	if r.Stage != "ysb/join" || !strings.HasSuffix(r.Evidence, "; ysb/window busy 96% too: a tie") {
		t.Fatalf("%q (%q)", r.Stage, r.Evidence)
	}
	b.Rank([]Activity{timed(0.1, 0.9), timed(0.1, 0.85), timed(0.99, 0.0), timed(0.95, 0)}, &r)
	if strings.Contains(r.Evidence, "tie") {
		t.Fatalf("four points apart: %q (%q)", r.Stage, r.Evidence)
	}
}
