// Package driver carries the harness's buckets through a message broker
// that is the system under test: a sender thread publishes into it, a
// receiver lane consumes from it. A broker endpoint is a URL whose scheme
// names the driver: nats://HOST:PORT/SUBJECT (core NATS),
// jetstream://HOST:PORT/SUBJECT (JetStream), redis://HOST:PORT/KEY (Redis
// Streams) and kafka://HOST:PORT/TOPIC (Kafka); ZeroMQ endpoints (tcp://,
// ipc://, inproc://) stay on the harness's own ZeroMQ path.
//
// This package is the endpoints' parsing, the producer and consumer
// interfaces, and a Registry of drivers; each broker's client is a package
// of its own (driver/nats, driver/redis, driver/kafka) that a program
// registers only if it talks to that broker (cmd/internal/brokers), so
// that the sweep, the analyses and cpsweep link no broker client.
//
// The harness owns time and identity: a message is a whole bucket in the
// wire format (stream, sequence, tuple ids, intended send times inside),
// so loss, duplicates and order are checked by sequence as over ZeroMQ,
// and no driver relies on a broker's timestamp or message id. A producer
// never blocks the emission loop: a full in-flight window is ErrFull,
// which the sender treats as ZeroMQ's high-water mark (block or drop, as
// --overflow says).
package driver
