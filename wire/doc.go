// Package wire defines the bytes that travel between dgsend, a system under
// test, and dgrecv: a ZeroMQ message is one bucket (a fixed 24-byte header
// followed by msgpack-encoded tuples) or one end-of-stream marker. The
// normative description is docs/wire.md; this package and that document
// change together, and any change to the layout bumps Version.
package wire
