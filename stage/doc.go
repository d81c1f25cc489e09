// Package stage is the pipeline's one time-accounting mechanism: every
// stage (a sender thread, a lane, the consumer) spends its time in a few
// states, and counts the items it processed and, where it has one, its
// queue. The states change once per bucket (or less), on the stage's own
// thread, from clock reads the loop already makes; a Set samples every
// stage at the same instants into a per-period series, which the
// diagnosis (FlowDiagnoser's labels and the bottleneck ranking) and the
// later analyses read. Nothing else keeps time per stage.
package stage
