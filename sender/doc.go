// Package sender is dgsend's engine: pinned emission threads that send
// pre-serialized buckets over ZeroMQ PUSH sockets on a TSC-paced schedule
// (the paper's Fig. 9b), count what they emitted, dropped and how late they
// were, and end every stream with a marker carrying its final counts.
//
// Pacing has two parts and two names: a Schedule says when each slot is
// due (ConstantSchedule for a constant rate; a shaped or a Poisson
// schedule for a scenarios.Shape), and a thread's waiter holds it until
// then, as --idle says (spin, sleep or hybrid).
package sender
