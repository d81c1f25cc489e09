// Package protocol is the agents' control API as data: the paths, the
// request and response types (a sender's or a receiver's trial, the
// trial's status and results, the agent's description, the live state
// changes) and their validation. It links no HTTP (the controller's
// client is package remote) and no receiver (results travel as
// receiver/tally), so a reader of a run directory can use it.
package protocol
