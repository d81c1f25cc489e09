// Package sendagent is the sender's side of an agent (dgsend --agent): it
// parses a SenderTrial and runs it as a sender. It links no receiver.
package sendagent
