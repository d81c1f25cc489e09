// Package driver carries the harness's buckets through a message broker
// that is the system under test: a sender thread publishes into it, a
// receiver lane consumes from it. A broker endpoint is a URL whose scheme
// names the driver (nats://HOST:PORT/SUBJECT for core NATS,
// jetstream://HOST:PORT/SUBJECT for JetStream); ZeroMQ endpoints (tcp://,
// ipc://, inproc://) stay on the harness's own ZeroMQ path.
//
// The harness owns time and identity: a message is a whole bucket in the
// wire format (stream, sequence, tuple ids, intended send times inside),
// so loss, duplicates and order are checked by sequence as over ZeroMQ,
// and no driver relies on a broker's timestamp or message id. A producer
// never blocks the emission loop: a full in-flight window is ErrFull,
// which the sender treats as ZeroMQ's high-water mark (block or drop, as
// --overflow says).
package driver
