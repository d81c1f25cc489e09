package tally

import (
	"strings"
	"testing"
)

// The most likely cause comes first: a run whose peer never connected
// says so before the schedule it therefore missed.
func TestLikelyCauseFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     Result
		first string
	}{
		{"no peer", Result{Schedule: "99000 tuples behind", Errors: []string{"end marker of stream 0 not delivered", "thread 0: no peer ever connected on tcp://h:1: nothing was delivered"}},
			"dgsend: FAILED: thread 0: no peer ever connected on tcp://h:1: nothing was delivered (is the receiver running"},
		{"another error", Result{Schedule: "behind", Errors: []string{"socket closed"}}, "dgsend: FAILED: socket closed"},
		{"no error, behind", Result{Schedule: "100 behind"}, "dgsend: SCHEDULE NOT KEPT: 100 behind"},
		{"kept", Result{ScheduleKept: true, Scenario: "ad-event"}, "dgsend: ad-event"},
	} {
		var b strings.Builder
		tc.r.WriteText(&b)
		if first := strings.SplitN(b.String(), "\n", 2)[0]; !strings.HasPrefix(first, tc.first) {
			t.Errorf("%s: first line %q, want %q...", tc.name, first, tc.first)
		}
	}
}
