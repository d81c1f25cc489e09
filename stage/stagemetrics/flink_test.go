package stagemetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
)

// TestFlinkRatesOverTheLatestPeriod: an operator busy 30 ms and blocked
// 20 ms of a 100 ms period reads 300 and 200 ms per second, its records
// as a counter and per second; stages of other kinds are not operators.
func TestFlinkRatesOverTheLatestPeriod(t *testing.T) {
	clock := tsc.NewClockHz(1e9)
	set := stage.NewSet(clock, 100*time.Millisecond)
	op := set.Add("join", stage.Operator, nil)
	set.Add("consumer", stage.Consumer, nil)
	f := NewFlink(set, "ysb")
	t0 := tsc.ReadFast()
	op.Start(stage.OpWaiting, t0)
	// two samples 100 ms apart, as the set's sampler takes them
	f.sample(stage.Snapshot{TSC: t0, Accounts: []*stage.Account{op}, Readings: []stage.Reading{op.Read(t0)}})
	op.Enter(stage.OpBusy, t0+50e6)
	op.Enter(stage.OpBlocked, t0+80e6)
	op.Enter(stage.OpWaiting, t0+100e6)
	op.Add(1, 40)
	f.sample(stage.Snapshot{TSC: t0 + 100e6, Accounts: []*stage.Account{op}, Readings: []stage.Reading{op.Read(t0 + 100e6)}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f)
	want := `
# HELP flink_taskmanager_job_task_busyTimeMsPerSecond Milliseconds per second the operator was busy over the latest sampling period (Flink's name).
# TYPE flink_taskmanager_job_task_busyTimeMsPerSecond gauge
flink_taskmanager_job_task_busyTimeMsPerSecond{job_name="ysb",subtask_index="0",task_name="join"} 300
# HELP flink_taskmanager_job_task_backPressuredTimeMsPerSecond Milliseconds per second the operator was blocked on its output over the latest sampling period (Flink's name).
# TYPE flink_taskmanager_job_task_backPressuredTimeMsPerSecond gauge
flink_taskmanager_job_task_backPressuredTimeMsPerSecond{job_name="ysb",subtask_index="0",task_name="join"} 200
# HELP flink_taskmanager_job_task_idleTimeMsPerSecond Milliseconds per second the operator waited for input over the latest sampling period (Flink's name).
# TYPE flink_taskmanager_job_task_idleTimeMsPerSecond gauge
flink_taskmanager_job_task_idleTimeMsPerSecond{job_name="ysb",subtask_index="0",task_name="join"} 500
# HELP flink_taskmanager_job_task_operator_numRecordsIn Records (tuples) the operator has processed (Flink's name).
# TYPE flink_taskmanager_job_task_operator_numRecordsIn counter
flink_taskmanager_job_task_operator_numRecordsIn{job_name="ysb",operator_name="join",subtask_index="0",task_name="join"} 40
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"flink_taskmanager_job_task_busyTimeMsPerSecond", "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
		"flink_taskmanager_job_task_idleTimeMsPerSecond", "flink_taskmanager_job_task_operator_numRecordsIn"); err != nil {
		t.Error(err)
	}
}
