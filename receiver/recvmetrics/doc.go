// Package recvmetrics serves a receiver's live counters, its threads'
// CPU, its stage accounting and its service rates as Prometheus metrics
// (docs/metrics.md), apart from package receiver so that the receiving
// code links no Prometheus client.
package recvmetrics
