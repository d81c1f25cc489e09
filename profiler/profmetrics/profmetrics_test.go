package profmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cloudprofiler-go/cp/profiler"
)

// TestCollectorExportsTheProfilersCounts: a counter channel's total and
// last period, and each open channel's handler, as the metrics say.
func TestCollectorExportsTheProfilersCounts(t *testing.T) {
	p := profiler.New(10 * time.Millisecond)
	spc, err := p.Open("consumed", profiler.Config{Handler: profiler.HandlerSPC})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Open("receive.0", profiler.Config{Handler: profiler.HandlerNull}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1234; i++ {
		spc.LogTS(uint64(i))
	}
	time.Sleep(50 * time.Millisecond) // a few complete periods
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector{p})
	want := `
# HELP cp_profiler_channel An open channel and its current handler (value 1).
# TYPE cp_profiler_channel gauge
cp_profiler_channel{channel="consumed",handler="spc"} 1
cp_profiler_channel{channel="receive.0",handler="null"} 1
# HELP cp_profiler_counter_total Calls counted by a periodic-counter channel (SPC/MPC), across handler switches.
# TYPE cp_profiler_counter_total counter
cp_profiler_counter_total{channel="consumed"} 1234
# HELP cp_profiler_sample_period_seconds The counters' sampling period.
# TYPE cp_profiler_sample_period_seconds gauge
cp_profiler_sample_period_seconds 0.01
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "cp_profiler_channel", "cp_profiler_counter_total", "cp_profiler_sample_period_seconds"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "cp_profiler_counter_last_period"); err != nil || n != 1 {
		t.Errorf("last-period series: %d, %v", n, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
