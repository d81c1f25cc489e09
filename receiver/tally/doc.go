// Package tally is what a receiver counted over a run: the end-of-run
// accounting (Result, per stream, per lane, the backlog samples) and its
// text for a person. It imports nothing of the receiver's machinery, so
// the agent protocol and its clients can carry a result without linking a
// receiver (dgsend does not).
package tally
