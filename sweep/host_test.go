package sweep

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/sweep/protocol"
)

// TestMachineNamesGroupPodsOfOneNode: agents in containers on one machine
// (one boot id, their own host names) are one host; agents without a boot
// id keep their host names.
func TestMachineNamesGroupPodsOfOneNode(t *testing.T) {
	m := machineNames{}
	for _, tc := range []struct {
		info protocol.AgentInfo
		want string
	}{
		{protocol.AgentInfo{Host: "cp-sender-0", Machine: "b1"}, "cp-sender-0"},
		{protocol.AgentInfo{Host: "cp-receiver-0", Machine: "b2"}, "cp-receiver-0"},
		{protocol.AgentInfo{Host: "cp-sender-1", Machine: "b1"}, "cp-sender-0"},
		{protocol.AgentInfo{Host: "old-agent"}, "old-agent"},
		{protocol.AgentInfo{Host: "odd", Machine: strings.Repeat("x", 65)}, "odd"},
	} {
		if got := m.host(tc.info); got != tc.want {
			t.Errorf("%+v: host %q, want %q", tc.info, got, tc.want)
		}
	}
}
