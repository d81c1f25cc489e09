// Package analysis is the room of the analyses of a finished run: this
// package joins the profiler logs of a run directory across nodes
// by tuple id and reports, per pair of instrumentation points, where a
// tuple's time goes and how well it is known: the latency distribution in
// the reference node's time with the distribution of its strict error
// bound, split into same-node and cross-node pairs (the paper's Fig. 17),
// plus throughput over time from the periodic counters.
//
// It streams: every log is read block by block, and a join keeps only the
// tuples seen at the first point and not yet at the second (per stream, in
// order). Logs of one point must list each stream's tuples in order, which
// dgsend and dgrecv do (a stream is one sender thread, received by one
// lane, consumed in order).
//
// Its sub-packages: activity (the program activity graph), report
// (report.html) and compare (two runs side by side); the run directory it
// reads is package rundir's.
package analysis
