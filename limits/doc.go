// Package limits is the one home of "what limits a run": the rule by
// which a trial's limit gives way to the host's CPUs, each trial's next
// limit from its stages' service rates (checked against every trial),
// the answer's limiting stage, the service rates' explanation of the
// answer, and the agreement of the three analyses (the stage diagnosis,
// the service rates, the activity graph). The sweep's progress lines,
// summary.json, the report and the agreement line all read these, so
// that no output computes its own.
package limits
