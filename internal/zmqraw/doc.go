// Package zmqraw is the hot-path I/O on ZeroMQ sockets created and
// configured with github.com/pebbe/zmq4: a send that is one cgo call with no
// allocation, and a receive into a caller-owned, reused buffer. pebbe's
// RecvBytes costs four cgo calls and an allocation per message (~400-500 ns
// here), too much at millions of messages per second; everything that is not
// per-message (context, options, bind, connect, close) stays with pebbe.
package zmqraw
