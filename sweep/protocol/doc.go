// Package protocol is the agents' control API on its own: the paths, the
// request and response types (a sender's or a receiver's trial, the
// trial's status and results, the agent's description, the live state
// changes), their validation, and the client the controller drives an
// agent with. dgsend, dgrecv and the agent server import it without
// importing the sweep; it links no receiver (results travel as
// receiver/tally) and no analysis.
package protocol
