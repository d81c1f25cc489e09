// Package benthos plugs the harness into the Benthos stream engine
// (github.com/redpanda-data/benthos/v4, MIT): the broker drivers become the
// engine's input cp_input and output cp_output, so that any Benthos job can
// read the harness's buckets from a topic and write its results to another,
// and the sweep can measure it.
//
// The engine's core has no broker inputs or outputs (only files, sockets,
// HTTP and the like); this package brings this project's: NATS, JetStream,
// Redis Streams and Kafka, whichever the driver.Registry given to Register
// holds.
//
// A bucket becomes one message per tuple, with the tuple's identity in the
// message's metadata (cp_tuple_id, cp_intended_ns: docs/sut.md) and its
// fields as the content (an ad event as a structured object). cp_output
// does the reverse: each batch becomes one bucket of a stream of its own,
// numbered 0, 1, 2, ..., every tuple carrying the identity of the input it
// came from, or, for a window's count, of the latest input it counted.
package benthos
