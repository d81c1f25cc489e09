// Package profmetrics exports a running profiler's channels and counters
// as Prometheus metrics. It is apart from the profiler's core so that a
// program that embeds the profiler links a metrics library only when it
// asks for one.
package profmetrics
