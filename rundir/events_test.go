package rundir

import (
	"testing"

	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
)

// TestInEvents: a job's input lag in messages is said in events too when
// each message is a bucket of several (492 messages were 49,200 events),
// and not when a message is one event or the senders' buckets differ.
func TestInEvents(t *testing.T) {
	senders := func(buckets ...int) *Outcome {
		o := &Outcome{}
		for _, b := range buckets {
			o.Senders = append(o.Senders, &sendtally.Result{BucketSize: b})
		}
		return o
	}
	for _, tc := range []struct {
		name     string
		o        *Outcome
		messages float64
		want     string
	}{
		{"buckets of 100", senders(100, 100), 492, " (49.20 k events)"},
		{"one event a message (JSON)", senders(1), 492, ""},
		{"buckets that differ", senders(100, 10), 492, ""},
		{"nothing grew", senders(100), 0, ""},
		{"no outcome", nil, 492, ""},
	} {
		if got := tc.o.InEvents(tc.messages); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
