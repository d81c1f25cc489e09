// Package nats is the driver for NATS: core NATS (nats://) and JetStream
// (jetstream://), publishing with the nats.go client. The core NATS
// consumer speaks the client protocol itself (wiresub.go: nats.go's
// per-message allocations and hand-offs cost more than the server's own
// subscriber at small messages); on a server that requires TLS, and for
// JetStream, it is nats.go's.
package nats
