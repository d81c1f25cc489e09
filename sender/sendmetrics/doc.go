// Package sendmetrics serves a sender's live counters, its threads' CPU,
// its stage accounting and its service rates as Prometheus metrics
// (docs/metrics.md), apart from package sender so that the emission code
// links no Prometheus client.
package sendmetrics
