package limits

import (
	"slices"
	"strings"
	"testing"
)

func TestAgree(t *testing.T) {
	ex := func(d, r, g string) []Explanation {
		return []Explanation{{Analysis: "diagnosis", Stage: d}, {Analysis: "service rates", Stage: r}, {Analysis: "activity graph", Stage: g}}
	}
	for _, tc := range []struct {
		name       string
		ex         []Explanation
		agree      bool
		wantPhrase []string
	}{
		{"the same stage, three spellings", ex("consumer", "receiver0/consumer", "receiver0/consumer"), true, []string{"agree: consumer"}},
		{"a lane", ex("lane0", "receiver0/lane0", "receiver0/lane1"), true, []string{"agree: lane"}},
		{"the sender's thread", ex("thread0", "", "sender0/thread0"), true, []string{"agree: sender thread", "service rates: no stage"}},
		{"host CPU against the victim", ex("host CPU", "sender0/thread0", "sender0/thread0"), false,
			[]string{"DISAGREE", "diagnosis: host CPU", "a host CPU limit shows in the graph only as its threads' wait for a CPU"}},
		{"the transport", ex("stream0", "receiver0/consumer", "sender0/thread0"), false, []string{"DISAGREE", "I/O threads log no activities"}},
		{"one named", ex("none", "", "receiver0/consumer"), false, []string{"nothing to compare"}},
		{"a relay, by the diagnosis and by messages in flight", ex("sut/stream0", "", "sut/stream0"), true, []string{"agree: system under test"}},
		{"a broker on another node's timeline", ex("receiver0/nats/stream0", "", "nats/stream0"), true, []string{"agree: system under test"}},
		{"a relay against its victim", ex("sut/stream0", "", "sender0/thread0"), false, []string{"DISAGREE", "the system under test is a black box"}},
		{"a job's operator, three spellings", ex("ysb/join", "job0/join.1", "job0/op.join"), true, []string{"agree: join"}},
		{"two operators", ex("ysb/filter", "job0/filter", "job0/op.join"), false, []string{"DISAGREE"}},
		// A shared thread agrees with an operator on it, and with itself
		// under another copy; not with an operator off it.
		{"a thread and an operator on it", []Explanation{
			{Analysis: "diagnosis", Stage: "ysb/pipeline thread 0", Operators: []string{"ysb/filter", "ysb/join"}},
			{Analysis: "service rates", Stage: "ysb/pipeline thread 1", Operators: []string{"ysb/filter.1", "ysb/join.1"}},
			{Analysis: "activity graph", Stage: "job0/op.join"}}, true, []string{"agree: pipeline thread, join on it", "diagnosis: ysb/pipeline thread 0"}},
		{"a thread by two", []Explanation{
			{Analysis: "diagnosis", Stage: "ysb/pipeline thread 0", Operators: []string{"ysb/filter", "ysb/join"}},
			{Analysis: "service rates", Stage: "ysb/pipeline thread 0", Operators: []string{"ysb/filter", "ysb/join"}}}, true, []string{"agree: pipeline thread"}},
		{"an operator off the thread", []Explanation{
			{Analysis: "diagnosis", Stage: "ysb/pipeline thread 0", Operators: []string{"ysb/filter", "ysb/join"}},
			{Analysis: "activity graph", Stage: "job0/op.window"}}, false, []string{"DISAGREE"}},
		{"the broker a job drains, by its topic", ex("jetstream ysb.in", "", "jetstream ysb.in"), true, []string{"agree: jetstream ysb.in"}},
		{"the broker against the job", ex("jetstream ysb.in", "ysb/join", ""), false, []string{"DISAGREE", "the system under test is a black box"}},
		{"an agent's stream is the transport", ex("receiver0/stream0", "", "stream0"), true, []string{"agree: transport"}},
		{"the graph below the answer is told to look at the limit", []Explanation{
			{Analysis: "diagnosis", Stage: "consumer", Trial: "at the first failing rate above the answer", AboveAnswer: true},
			{Analysis: "activity graph", Stage: "sender0/thread0", Trial: "at the profiled trial, 42.00 k/s = 90% of the answer"}}, false,
			[]string{"DISAGREE", "diagnosis at the first failing rate", "activity graph at the profiled trial, 42.00 k/s = 90%", "--profile-at limit"}},
		{"the graph at the limit is not told so", []Explanation{
			{Analysis: "diagnosis", Stage: "consumer", Trial: "at the first failing rate above the answer", AboveAnswer: true},
			{Analysis: "activity graph", Stage: "sender0/thread0", Trial: "at the profiled trial, 51.00 k/s = 110% of the answer", AboveAnswer: true}}, false,
			[]string{"DISAGREE", "110% of the answer"}},
		{"one trial for two analyses is not called different trials", []Explanation{
			{Analysis: "diagnosis", Stage: "host CPU", Trial: "at the first failing rate above the answer", AboveAnswer: true},
			{Analysis: "service rates", Stage: "stream0", Trial: "at the first failing rate above the answer", AboveAnswer: true}}, false,
			[]string{"DISAGREE", "I/O threads log no activities"}},
	} {
		a := Agree(tc.ex)
		if tc.name == "one trial for two analyses is not called different trials" && strings.Contains(a.Statement, "different trials") {
			t.Errorf("%s: %q", tc.name, a.Statement)
		}
		if a.Agree != tc.agree {
			t.Errorf("%s: agree %v, want %v: %s", tc.name, a.Agree, tc.agree, a.Statement)
		}
		if tc.name == "the graph at the limit is not told so" && strings.Contains(a.Statement, "--profile-at limit") {
			t.Errorf("%s: %q advises profiling at the limit, where it was", tc.name, a.Statement)
		}
		for _, w := range tc.wantPhrase {
			if !strings.Contains(a.Statement, w) {
				t.Errorf("%s: %q lacks %q", tc.name, a.Statement, w)
			}
		}
	}
}

// The console's agreement is at most two lines, with no analysis's notes:
// who says what, and when they disagree, which one to trust where.
func TestAgreementShort(t *testing.T) {
	for _, tc := range []struct {
		name string
		ex   []Explanation
		want []string
	}{
		{"agree", []Explanation{{Analysis: "diagnosis", Stage: "consumer"}, {Analysis: "service rates", Stage: "receiver0/consumer", Note: "through stream0"}},
			[]string{"the analyses agree: consumer"}},
		{"disagree", []Explanation{{Analysis: "diagnosis", Stage: "ysb/join", Trial: "at the first failing rate above the answer"},
			{Analysis: "service rates", Stage: "ysb/join"}, {Analysis: "activity graph", Stage: "job0/op.window", Note: "busy 60%"}},
			[]string{"the analyses disagree: diagnosis ysb/join, service rates ysb/join, activity graph job0/op.window",
				"trust the diagnosis (ysb/join, at the first failing rate above the answer); why they differ: the report, or -v"}},
		{"two of three", []Explanation{{Analysis: "diagnosis", Stage: "none"}, {Analysis: "service rates", Stage: "sut/stream0"},
			{Analysis: "activity graph", Stage: "sut/stream0"}},
			[]string{"2 of 3 analyses agree: system under test (the diagnosis named no stage)"}},
		{"one named", []Explanation{{Analysis: "diagnosis", Stage: "consumer"}, {Analysis: "service rates"}},
			[]string{"fewer than two analyses named a stage: nothing to compare"}},
	} {
		got := strings.Split(Agree(tc.ex).Short, "\n")
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
