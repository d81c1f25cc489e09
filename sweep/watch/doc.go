// Package watch is cpsweep watch's live view of running agents: it scrapes
// every agent's Prometheus metrics (the stage accounting, the diagnosis
// labels and the service-rate estimates, docs/metrics.md) at an interval,
// turns successive scrapes into rates per stage, checks a live progress
// invariant, and renders the view for a terminal, as JSON and as a small
// web page.
//
// The critical participation of the activity graph is live too: the
// watch reads every agent's latest stage state changes (GET
// /v1/trial/activity) and builds the graph of the last whole windows from
// them, with local edges only (the per-tuple points that make message
// edges stay in the profiled logs: cpsweep analyze --pag).
package watch
