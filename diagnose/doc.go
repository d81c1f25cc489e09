// Package diagnose explains where a pipeline's limit is, from the stage
// accounting (package stage). It labels every stage of every snapshot
// with FlowDiagnoser's HEALTHY / DONTCARE / BLOCKED / STALLED (Miller's
// dissertation, Ch. 2, Algorithms 1-5, on a general dependency graph, with
// StreamsDiagnoser's negative-queue carry-over), confirms a stall over
// consecutive snapshots, and ranks the stages that limit throughput
// without stalling (the dissertation's future work): the limiting stage is
// busy and not blocked while the stage before it is blocked or its queue
// grows.
package diagnose
