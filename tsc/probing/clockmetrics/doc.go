// Package clockmetrics serves the latest clock relation of every pair of
// nodes (package probing) as Prometheus gauges (docs/metrics.md), apart
// from package probing so that its readers link no Prometheus client.
package clockmetrics
