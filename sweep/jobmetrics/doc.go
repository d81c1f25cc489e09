// Package jobmetrics reads a job's operators from the Prometheus metrics
// it already exports, for a job in any language (cpsweep --job-metrics):
// each operator's time per second busy, back-pressured and idle, and its
// records in, by Flink's names (busyTimeMsPerSecond, ...) or by the
// names a mapping file gives. Scraped every period through a trial, they
// become the same operator series a job agent serves (package dataflow),
// which the diagnosis and the service rates take as stages: FlowDiagnoser's
// two bits, and DS2's true processing rate (records ÷ busy time).
package jobmetrics
