// Package tally is what a sender did over a run: its end-of-run accounting
// (Result, per stream, each data socket's connections) and its text for a
// person. It imports nothing of the sender's machinery, so that the agent
// protocol and its clients carry a result without linking a sender (dgrecv
// does not), as receiver/tally does for the receiver's.
package tally
