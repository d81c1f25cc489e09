package diagnose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/stage/stagemetrics"
	"github.com/cloudprofiler-go/cp/tsc"
)

// TestWatchLogsAConfirmedStall drives a receiver's stages by hand: the
// consumer stops with buckets in its ring for three samples, then goes on.
// The stall is logged once when confirmed and once when it ends, and
// cp_stage_label follows the labels.
func TestWatchLogsAConfirmedStall(t *testing.T) {
	set := stage.NewSet(tsc.NewClockHz(1e9), stage.MinPeriod)
	ring := int64(0)
	lane := set.Add("lane0", stage.Lane, func() int64 { return 1 })
	cons := set.Add("consumer", stage.Consumer, func() int64 { return ring })
	var logs []string
	LogStalls(set, 2, func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) })
	now := uint64(1000)
	lane.Start(stage.Decoding, now)
	cons.Start(stage.Working, now)
	step := func(consumed bool) {
		now += 100
		lane.Add(1, 100)
		if consumed {
			cons.Add(1, 100)
		}
		set.Sample()
	}
	set.Sample() // the baseline
	step(true)
	ring = 5
	step(false) // STALLED, not yet confirmed
	if len(logs) != 0 {
		t.Fatalf("logged before confirmation: %v", logs)
	}
	step(false) // confirmed
	if len(logs) != 1 || !strings.Contains(logs[0], "consumer STALLED") {
		t.Fatalf("logs %v, want the consumer's stall", logs)
	}
	if got := labelOf(t, set, "consumer"); got != "STALLED" {
		t.Fatalf("cp_stage_label says consumer %s", got)
	}
	step(false)
	step(true) // it goes on
	if len(logs) != 2 || !strings.Contains(logs[1], "consumer stall ended after") {
		t.Fatalf("logs %v, want the end of the stall", logs)
	}
	if got := labelOf(t, set, "consumer"); got != "HEALTHY" {
		t.Fatalf("cp_stage_label says consumer %s after it went on", got)
	}
}

// labelOf reads the label whose cp_stage_label is 1 for a stage.
func labelOf(t *testing.T, set *stage.Set, name string) string {
	t.Helper()
	ch := make(chan prometheus.Metric, 256)
	stagemetrics.Collector{Set: set}.Collect(ch)
	close(ch)
	found := ""
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Desc().String(), "cp_stage_label") || pb.GetGauge().GetValue() != 1 {
			continue
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["stage"] == name {
			found = labels["label"]
		}
	}
	return found
}
