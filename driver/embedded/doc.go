// Package embedded runs a NATS server with JetStream inside the process,
// its store in a temporary folder, so that a new user sees a sweep
// through a real broker with nothing installed (cpsweep demo nats). A
// sweep against it measures this host's NATS beside the harness, not a
// deployment.
package embedded
