package rundir

import (
	"testing"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/histo"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
)

// TestTrialsCSVRow: the latency columns are the worst receiver's, the
// lateness the worst sender's, the cores summed by role with the system
// under test counted once a host; what a trial did not record is empty.
func TestTrialsCSVRow(t *testing.T) {
	tr := Trial{N: 3, Rate: 1000, Achieved: 990, Purpose: "ramp", Verdict: Verdict{Pass: true},
		Outcome: &Outcome{
			Senders: []*sendtally.Result{{Lateness: histo.Summary{P99: 40}}, {Lateness: histo.Summary{P99: 90}}, nil},
			Receivers: []*tally.Result{
				{Latency: histo.Summary{Count: 5, P50: 10, P99: 200, P999: 300, Max: 400}},
				{Latency: histo.Summary{Count: 5, P50: 20, P99: 100, P999: 900, Max: 950}}}},
		Hosts: []cpustat.AgentHost{
			{Node: "sender0", Host: "a", Summary: cpustat.Summary{Process: 0.5, SUT: 1, HostBusy: 0.4, OtherProcesses: 0.1}},
			{Node: "receiver0", Host: "a", Summary: cpustat.Summary{Process: 0.25, SUT: 1, HostBusy: 0.4, OtherProcesses: 0.1}},
			{Node: "sender1", Host: "b", Summary: cpustat.Summary{Process: 0.5, SUT: 0.5, HostBusy: 0.9, OtherProcesses: 0.2}}}}
	row := trialRow(tr)
	if len(row) != len(trialsHeader) {
		t.Fatalf("%d columns, header has %d", len(row), len(trialsHeader))
	}
	got := map[string]string{}
	for i, h := range trialsHeader {
		got[h] = row[i]
	}
	for col, want := range map[string]string{"trial": "3", "pass": "true", "lateness_p99_ns": "90", "latency_p50_ns": "20", "latency_p99_ns": "200",
		"latency_p999_ns": "900", "latency_max_ns": "950", "sender_cores": "1.000", "receiver_cores": "0.250", "sut_cores": "1.500",
		"host_busy": "0.900", "other_processes": "0.200"} {
		if got[col] != want {
			t.Errorf("%s = %q, want %q", col, got[col], want)
		}
	}
	bare := trialRow(Trial{N: 1, Outcome: &Outcome{Receivers: []*tally.Result{{}}}})
	for i, h := range trialsHeader[7:] {
		if bare[7+i] != "" {
			t.Errorf("a trial that recorded no %s shows %q", h, bare[7+i])
		}
	}
}
