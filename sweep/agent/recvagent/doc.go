// Package recvagent is the receiver's side of an agent (dgrecv --agent): a
// ReceiverTrial as the receiver configuration an agent runs, checked as it
// will run it. Only dgrecv and the controller import it, so dgsend links no
// receiver.
package recvagent
