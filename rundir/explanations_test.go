package rundir

import (
	"testing"

	"github.com/cloudprofiler-go/cp/protocol"
)

// TestSummaryBlackBox: the system in the path is the one summary.json
// names; a run directory written before it did is read as those sweeps
// wrote the plan and the receivers' data endpoints (never from the
// topology line, which is for people).
func TestSummaryBlackBox(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Summary
		want string
	}{
		{"named", Summary{BlackBoxName: "kafka", Topology: "senders a -> receivers b (data tcp://h:1)"}, "kafka"},
		{"named relay", Summary{BlackBoxName: "sut"}, "sut"},
		{"none named, direct (old directory)", Summary{Topology: "senders a -> receivers b (data tcp://127.0.0.1:5555)"}, ""},
		{"none named, broker (old directory)", Summary{Topology: "senders a -> receivers b (data tcp://h:1)", Agents: []protocol.AgentInfo{
			{Role: protocol.RoleSender, DataEndpoints: []string{"tcp://127.0.0.1:9"}},
			{Role: protocol.RoleReceiver, DataEndpoints: []string{"jetstream://127.0.0.1:4222/cp.0"}}}}, "jetstream"},
		{"none named, relay (old directory)", Summary{Plan: []byte(`{"relay": true}`), Topology: "senders a -> receivers b (data tcp://h:1)"}, "sut"},
	} {
		if got := tc.s.BlackBox(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
