package cpumetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/cpustat"
)

var (
	descThreadCPU  = prometheus.NewDesc("cp_thread_cpu_seconds_total", "CPU time of the process's threads by role (thread<N>, lane<N>, consumer, zmq-io, zmq-reaper, other).", []string{"thread"}, nil)
	descThreadWait = prometheus.NewDesc("cp_thread_runqueue_seconds_total", "Time the process's threads waited runnable but not running, by role.", []string{"thread"}, nil)
	descThreadInv  = prometheus.NewDesc("cp_thread_involuntary_switches_total", "Times the scheduler took a CPU away from the process's threads, by role.", []string{"thread"}, nil)
	descHostCPU    = prometheus.NewDesc("cp_host_cpu_seconds_total", "The host's CPU time summed over every CPU: busy, steal (taken by the hypervisor) and idle.", []string{"mode"}, nil)
)

// Collector is a sampler's metrics; a nil sampler has none.
type Collector struct{ S *cpustat.Sampler }

// Describe implements prometheus.Collector.
func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descThreadCPU, descThreadWait, descThreadInv, descHostCPU} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads /proc at scrape time
// (nothing where /proc cannot be read). A thread that exited leaves its
// role's counters lower: a rate() over such a drop is the usual counter
// reset.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	if c.S == nil {
		return
	}
	smp, err := c.S.Read()
	if err != nil {
		return
	}
	for name, t := range smp.Threads {
		ch <- prometheus.MustNewConstMetric(descThreadCPU, prometheus.CounterValue, t.CPU, name)
		ch <- prometheus.MustNewConstMetric(descThreadWait, prometheus.CounterValue, t.Runqueue, name)
		ch <- prometheus.MustNewConstMetric(descThreadInv, prometheus.CounterValue, float64(t.Involuntary), name)
	}
	ch <- prometheus.MustNewConstMetric(descHostCPU, prometheus.CounterValue, smp.HostBusy, "busy")
	ch <- prometheus.MustNewConstMetric(descHostCPU, prometheus.CounterValue, smp.HostSteal, "steal")
	ch <- prometheus.MustNewConstMetric(descHostCPU, prometheus.CounterValue, smp.HostIdle, "idle")
}
