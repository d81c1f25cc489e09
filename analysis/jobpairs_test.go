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

// TestJobsChainByTheirTopics: YSB in two processes (the filter's part
// writes the views that the count's part reads): the operators are named
// with their nodes, the filter feeds the count's input, and a tuple's
// pairs run from the senders through both to the receivers, each
// operator's point its own node's.
func TestJobsChainByTheirTopics(t *testing.T) {
	filter := jobFlow{node: "job0", edges: [][2]string{{"input", "filter"}}, reads: []string{"jetstream:ysb.in"}, writes: []string{"jetstream:ysb.views"}}
	count := jobFlow{node: "job1", edges: [][2]string{{"input", "join"}, {"join", "window"}}, reads: []string{"jetstream:ysb.views"}, writes: []string{"jetstream:ysb.out"}}
	other := jobFlow{node: "job2", edges: [][2]string{{"a", "b"}}, reads: []string{"kafka:ysb.views"}, writes: []string{"kafka:x"}} // another driver's topic of that name
	edges := chainJobs([]jobFlow{count, filter, other})
	want := [][2]string{{"job1/input", "job1/join"}, {"job1/join", "job1/window"}, {"job0/input", "job0/filter"}, {"job2/a", "job2/b"}, {"job0/filter", "job1/input"}}
	if !reflect.DeepEqual(edges, want) {
		t.Fatalf("edges %v, want %v", edges, want)
	}
	points := []string{"emit", "job0/op.input", "job0/op.filter", "job1/op.input", "job1/op.join", "job1/op.window", "receive", "deserialized", "consumed"}
	pairs, problems := HopPairs(edges, func(p string) bool { return slices.Contains(points, p) })
	wantPairs := [][2]string{{"emit", "job0/op.input"}, {"job0/op.input", "job0/op.filter"}, {"job0/op.filter", "job1/op.input"},
		{"job1/op.input", "job1/op.join"}, {"job1/op.join", "job1/op.window"}, {"job1/op.window", "receive"}, {"receive", "deserialized"}, {"deserialized", "consumed"}}
	if !reflect.DeepEqual(pairs, wantPairs) || len(problems) != 0 {
		t.Errorf("pairs %v, problems %v; want %v", pairs, problems, wantPairs)
	}
	for _, tc := range []struct {
		node, channel string
		several       bool
		want          string
	}{
		{"job1", "op.join.1", true, "job1/op.join"},
		{"job1", "op.join.1", false, "op.join"},
		{"receiver0", "receive.1", true, "receive"},
	} {
		if got := pointKey(tc.node, tc.channel, tc.several); got != tc.want {
			t.Errorf("pointKey(%s, %s, %v) = %s, want %s", tc.node, tc.channel, tc.several, got, tc.want)
		}
	}
	if OperatorPoint("job1/join.2") != "job1/op.join" || !IsOperatorPoint("job1/op.join") || IsOperatorPoint("receive") {
		t.Error("an operator named with its node: its point")
	}
}
