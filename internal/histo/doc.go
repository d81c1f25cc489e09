// Package histo holds the latency histograms of the hot loops: a log2
// histogram that one goroutine writes without atomics and publishes now and
// then for concurrent readers (Prometheus scrapes), and an HdrHistogram
// wrapper for the precise percentiles reported at the end of a run.
package histo
