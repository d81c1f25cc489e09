package analysis

import (
	"reflect"
	"slices"
	"testing"
)

// TestHopPairsFollowTheJobsEdges: the points a tuple passes, pair by
// pair: through a job's operators that log points along its edges (an
// input without points skipped, copies of an operator one point), or
// straight from the senders to the receivers without one.
func TestHopPairsFollowTheJobsEdges(t *testing.T) {
	harness := []string{"emit", "receive", "deserialized", "consumed"}
	ysb := [][2]string{{"input", "filter"}, {"filter", "join"}, {"join", "window"}, {"input.1", "filter.1"}, {"filter.1", "join.1"}, {"join.1", "window"}}
	for _, tc := range []struct {
		name     string
		edges    [][2]string
		points   []string
		want     [][2]string
		problems int
	}{
		{"no job", nil, harness,
			[][2]string{{"emit", "receive"}, {"receive", "deserialized"}, {"deserialized", "consumed"}}, 0},
		{"a point missing", nil, []string{"emit", "receive", "consumed"},
			[][2]string{{"emit", "receive"}, {"receive", "consumed"}}, 0},
		{"YSB, two copies", ysb, append([]string{"op.filter", "op.join", "op.window"}, harness...),
			[][2]string{{"emit", "op.filter"}, {"op.filter", "op.join"}, {"op.join", "op.window"}, {"op.window", "receive"}, {"receive", "deserialized"}, {"deserialized", "consumed"}}, 0},
		{"the join not traced", ysb, append([]string{"op.filter", "op.window"}, harness...),
			[][2]string{{"emit", "op.filter"}, {"op.filter", "op.window"}, {"op.window", "receive"}, {"receive", "deserialized"}, {"deserialized", "consumed"}}, 0},
		{"a job without points", ysb, harness,
			[][2]string{{"emit", "receive"}, {"receive", "deserialized"}, {"deserialized", "consumed"}}, 0},
		{"an operator no edge reaches", [][2]string{{"a", "b"}, {"c", "c2"}, {"c2", "c"}}, append([]string{"op.a", "op.b", "op.c"}, harness...),
			[][2]string{{"emit", "op.a"}, {"op.a", "op.b"}, {"op.b", "receive"}, {"receive", "deserialized"}, {"deserialized", "consumed"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := HopPairs(tc.edges, func(p string) bool { return slices.Contains(tc.points, p) })
			if !reflect.DeepEqual(got, tc.want) || len(problems) != tc.problems {
				t.Errorf("pairs %v, problems %v; want %v and %d problems", got, problems, tc.want, tc.problems)
			}
		})
	}
}
