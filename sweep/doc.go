// Package sweep finds the maximum sustainable throughput of a receiving
// system: it runs trials (every sender at its share of a target rate for a
// warm-up plus a measured window), judges each trial by explicit rules, and
// searches over rates, linearly as the paper does (Fig. 9a) or fast
// (exponential ramp, then bisection guided by the achieved rate). It also
// holds the control API shared by the agents (dgsend/dgrecv --agent) and
// the controller (cpsweep).
package sweep
