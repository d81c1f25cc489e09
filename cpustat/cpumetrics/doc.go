// Package cpumetrics serves a cpustat.Sampler's readings (the process's
// threads by role and the host) as Prometheus metrics (docs/metrics.md),
// apart from package cpustat so that its readers link no Prometheus client.
package cpumetrics
