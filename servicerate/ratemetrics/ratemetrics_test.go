package ratemetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cloudprofiler-go/cp/servicerate"
)

type fixedRates []servicerate.Rate

func (f fixedRates) Rates() []servicerate.Rate { return f }

// TestRatesServesConvergedEstimates: cp_stage_service_rate has one series
// per converged estimate, with its value, and none for the others.
func TestRatesServesConvergedEstimates(t *testing.T) {
	v := 95000.0
	rates := fixedRates{{Stage: "consumer", Method: "busy_time", TuplesPerS: &v}, {Stage: "consumer", Method: "raftlib"}}
	ch := make(chan prometheus.Metric, 8)
	Rates{Of: rates}.Collect(ch)
	close(ch)
	series := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		series[labels["stage"]+"/"+labels["method"]] = pb.GetGauge().GetValue()
	}
	if len(series) != 1 || series["consumer/busy_time"] != v {
		t.Fatalf("cp_stage_service_rate %v, want only consumer/busy_time = %.0f", series, v)
	}
}
