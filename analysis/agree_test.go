package analysis

import (
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
			[]string{"DISAGREE", "diagnosis: host CPU", "a host CPU limit has no activity"}},
		{"the transport", ex("stream0", "receiver0/consumer", "sender0/thread0"), false, []string{"DISAGREE", "I/O threads log no activities"}},
		{"one named", ex("none", "", "receiver0/consumer"), false, []string{"nothing to compare"}},
	} {
		a := Agree(tc.ex)
		if a.Agree != tc.agree {
			t.Errorf("%s: agree %v, want %v: %s", tc.name, a.Agree, tc.agree, a.Statement)
		}
		for _, w := range tc.wantPhrase {
			if !strings.Contains(a.Statement, w) {
				t.Errorf("%s: %q lacks %q", tc.name, a.Statement, w)
			}
		}
	}
}
