// Package tsc is everything about one node's time-stamp counter and how it
// relates to another node's:
//
//   - reading the counter (RDTSCP/RDTSC in Go assembly, a monotonic-clock
//     fallback elsewhere), invariant-TSC checks (DetectFeatures), frequency
//     calibration against CLOCK_MONOTONIC_RAW, and a Clock that turns ticks
//     into nanoseconds. Hot loops (the emission loop's busy-wait, the
//     profiler) read ticks with Read/ReadFast and compare integers; the
//     conversion happens off the hot path;
//   - the probe protocol (probe.go): a 48-byte UDP datagram per round trip,
//     a Responder that stamps it, and ProbePeer, which discards and counts
//     late, duplicated, foreign and malformed packets;
//   - relations between two nodes' counters from such probes: the paper's
//     MinRTT relation (§3, PaperRelation, with the duration cases of §3.3)
//     and the tighter one from every probe (relation.go, polygon.go), whose
//     bound is never wider and is no bound at all when no line fits;
//   - the network bound (network.go), which tightens a translation through
//     every path of pairwise relations.
//
// Sessions over HTTP between several nodes, and relation files, are in
// tsc/probing.
package tsc
