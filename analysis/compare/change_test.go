package compare

import (
	"strings"
	"testing"
)

// A difference is a change only when the two runs' own ranges do not
// overlap; a figure the repeats cannot judge says why.
func TestChanges(t *testing.T) {
	run := func(answer, spread float64, p99, bestP99 int64, runs int) Run {
		return Run{LastPass: answer, FirstFail: answer * 1.1, Boundary: true, Spread: spread, LatencyP50Ns: p99 / 4, LatencyP99Ns: p99,
			latencyRuns: runs, latencyRate: answer, bestP50: bestP99 / 4, bestP99: bestP99}
	}
	for _, tc := range []struct {
		name         string
		a, b         Run
		answer, p99  string // the statements hold these
		exceeds, lat bool
	}{
		{"within the spread", run(1e6, 0.04, 9e6, 8e6, 3), run(1.03e6, 0.04, 8.5e6, 7e6, 3),
			"+3.0%: noise: the runs' own ranges overlap (run 1 1.000 M/s to 1.040 M/s, run 2 1.030 M/s to 1.071 M/s)", "noise: the runs' own ranges overlap", false, false},
		{"a change both ways", run(1e6, 0.02, 9e6, 8e6, 3), run(1.2e6, 0.02, 20e6, 18e6, 3),
			"+20.0%: a CHANGE: the runs' own ranges do not overlap (run 1 1.000 M/s to 1.020 M/s, run 2 1.200 M/s to 1.224 M/s)", "+122.2%: a CHANGE", true, true},
		{"one run at the answer", run(1e6, 0.02, 9e6, 0, 1), run(1.01e6, 0.02, 9e6, 8e6, 3),
			"noise", "not judged, a run measured its answer once", false, false},
		{"an older run directory", run(1e6, 0.02, 9e6, 0, 3), run(1.01e6, 0.02, 9e6, 8e6, 3),
			"noise", "not judged, a run directory keeps no best run", false, false},
		{"no answer to use", run(1e6, 0.02, 9e6, 8e6, 3), func() Run { r := run(2e6, 0.02, 9e6, 8e6, 3); r.Trust = "disturbed"; return r }(),
			"not judged, a run's answer is not to be used", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := changes([]Run{tc.a, tc.b})
			if len(cs) != 3 || cs[0].Figure != "answer" || cs[2].Figure != "latency p99" {
				t.Fatalf("changes %+v", cs)
			}
			if !strings.Contains(cs[0].Statement, tc.answer) || cs[0].Exceeds != tc.exceeds {
				t.Errorf("answer: %q (exceeds %v), want %q", cs[0].Statement, cs[0].Exceeds, tc.answer)
			}
			if !strings.Contains(cs[2].Statement, tc.p99) || cs[2].Exceeds != tc.lat {
				t.Errorf("p99: %q (exceeds %v), want %q", cs[2].Statement, cs[2].Exceeds, tc.p99)
			}
			if cs[0].Judged == (cs[0].Why != "") {
				t.Errorf("judged %v but why %q", cs[0].Judged, cs[0].Why)
			}
		})
	}
}

// A linear search has no repeats: its answer's range runs to its first
// failing rate, and with nothing failed it has no upper end.
func TestAnswerSpanWithoutRepeats(t *testing.T) {
	a := Run{LastPass: 1e6, FirstFail: 1.5e6}
	b := Run{LastPass: 1.4e6, FirstFail: 2e6}
	if c := answerChange(a, b, 2); !c.Judged || c.Exceeds || c.Spread < 0.49 {
		t.Errorf("overlapping intervals: %+v", c)
	}
	if c := answerChange(a, Run{LastPass: 3e6}, 2); c.Judged || !strings.Contains(c.Why, "no upper end") {
		t.Errorf("nothing failed: %+v", c)
	}
}

// TestEveryChangeSentenceFollowsItsNumbers: over a table of differences
// and spreads, the sentence says CHANGE exactly when the two ranges it
// prints do not overlap, and never claims a size the numbers do not
// have (a -26.3% change once read "larger than the runs' own spread
// (34.1%)").
func TestEveryChangeSentenceFollowsItsNumbers(t *testing.T) {
	issue := answerChange(Run{LastPass: 97640, Boundary: true, Spread: 0.341}, Run{LastPass: 72000, Boundary: true, Spread: 0.05}, 2)
	if !issue.Exceeds || !strings.Contains(issue.Statement, "-26.3%: a CHANGE: the runs' own ranges do not overlap (run 1 97.64 k/s to 130.9 k/s, run 2 72.00 k/s to 75.60 k/s)") {
		t.Errorf("the issue's case: %q", issue.Statement)
	}
	for _, d := range []float64{-0.5, -0.263, -0.05, -0.01, 0, 0.01, 0.05, 0.2, 1} {
		for _, s1 := range []float64{0, 0.01, 0.05, 0.341} {
			for _, s2 := range []float64{0, 0.02, 0.3} {
				a := Run{LastPass: 1e5, Boundary: true, Spread: s1}
				b := Run{LastPass: 1e5 * (1 + d), Boundary: true, Spread: s2}
				c := answerChange(a, b, 2)
				overlap := c.FromRange[0] <= c.ToRange[1] && c.ToRange[0] <= c.FromRange[1]
				says := strings.Contains(c.Statement, "CHANGE")
				if !c.Judged || c.Exceeds == overlap || says != c.Exceeds || strings.Contains(c.Statement, "larger than") ||
					strings.Contains(c.Statement, "do not overlap") != c.Exceeds || strings.Contains(c.Statement, "ranges overlap") == c.Exceeds {
					t.Errorf("d %+.3f, spreads %.3f %.3f: %+v", d, s1, s2, c)
				}
			}
		}
	}
}
