// Package search finds the maximum sustainable throughput by running
// trials through a TrialFunc: the paper's linear search, and the fast search
// (a geometric ramp, narrowing guided by what failing trials achieved and
// by the stages' service rates, then repeats at the boundary that measure
// the answer's uncertainty). It knows nothing of agents or run
// directories' files: the sweep drives it, and records what it returns.
package search
