// Package sender is dgsend's engine: pinned emission threads that send
// pre-serialized buckets over ZeroMQ PUSH sockets on a TSC-paced schedule
// (the paper's Fig. 9b), count what they emitted, dropped and how late they
// were, and end every stream with a marker carrying its final counts.
package sender
