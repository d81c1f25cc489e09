package rundir

import (
	"encoding/json"
	"testing"
)

// A job sweep's plan says the topic its job reads, as driver:subject.
func TestPlanFactsJobInput(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{`{"job":{"input":"jetstream://127.0.0.1:4222/ysb.in?group=ysb"}}`, "jetstream:ysb.in"},
		{`{"job":{"input":"kafka://broker:9092/events"}}`, "kafka:events"},
		{`{"relay":true}`, ""},
		{`{"job":{"input":"no-url"}}`, ""},
	} {
		s := Summary{Plan: json.RawMessage(tc.plan)}
		if got := s.PlanFacts().JobInput(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.plan, got, tc.want)
		}
	}
}
