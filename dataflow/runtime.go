package dataflow

import (
	"math"
	"runtime/metrics"
)

// Runtime is what the Go runtime of this process has spent since it
// started (runtime/metrics): a job in Go shares its CPUs with its garbage
// collector, whose assists run inside the operators' own goroutines and
// whose workers run beside them, so a collector that takes a large share
// limits the job where no operator is the reason (issue 58: GOGC=5 halved
// YSB's capacity, and no stage was named).
type Runtime struct {
	// CPUSeconds is the CPU time the Go code and the runtime used (the
	// runtime's estimate: its processors' time, less their idle time).
	CPUSeconds float64
	// GCCPUSeconds is the collector's share of it: its assists, its
	// workers and its pauses.
	GCCPUSeconds float64
	// GCPauseSeconds is the time the world was stopped for it (estimated
	// from the pauses' histogram: each pause at its bucket's middle).
	GCPauseSeconds float64
	GCCycles       uint64
	// GOGC is the collector's setting, a percentage (-1: off).
	GOGC int64
}

// The runtime/metrics names read, in Runtime's order.
var runtimeMetrics = []string{
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/sched/pauses/total/gc:seconds",
	"/gc/cycles/total:gc-cycles",
	"/gc/gogc:percent",
}

// ReadRuntime reads the process's runtime (two reads give a window's
// deltas: Sub). It allocates, and is read twice a trial, not per tuple.
func ReadRuntime() Runtime {
	samples := make([]metrics.Sample, len(runtimeMetrics))
	for i, name := range runtimeMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	f := func(i int) float64 {
		if samples[i].Value.Kind() == metrics.KindFloat64 {
			return samples[i].Value.Float64()
		}
		return 0
	}
	u := func(i int) uint64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return samples[i].Value.Uint64()
		}
		return 0
	}
	r := Runtime{CPUSeconds: max(0, f(0)-f(1)), GCCPUSeconds: f(2), GCCycles: u(4), GOGC: int64(u(5))}
	if u(5) > math.MaxInt32 { // off: the runtime says the largest uint64
		r.GOGC = -1
	}
	if samples[3].Value.Kind() == metrics.KindFloat64Histogram {
		r.GCPauseSeconds = histogramSum(samples[3].Value.Float64Histogram())
	}
	return r
}

// histogramSum estimates a histogram's sum: each count at its bucket's
// middle (an open end at the bucket's finite bound).
func histogramSum(h *metrics.Float64Histogram) float64 {
	var sum float64
	for i, n := range h.Counts {
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		switch {
		case math.IsInf(lo, -1):
			lo = hi
		case math.IsInf(hi, 1):
			hi = lo
		}
		sum += float64(n) * (lo + hi) / 2
	}
	return sum
}

// Sub is the runtime's spending from earlier to r.
func (r Runtime) Sub(earlier Runtime) Runtime {
	d := Runtime{CPUSeconds: r.CPUSeconds - earlier.CPUSeconds, GCCPUSeconds: r.GCCPUSeconds - earlier.GCCPUSeconds,
		GCPauseSeconds: r.GCPauseSeconds - earlier.GCPauseSeconds, GOGC: r.GOGC}
	if r.GCCycles >= earlier.GCCycles {
		d.GCCycles = r.GCCycles - earlier.GCCycles
	}
	return d
}
