// Package fdlimit tells how many file descriptors a process has left under
// its limit (RLIMIT_NOFILE), so that the parts that take descriptors on
// request (ZeroMQ sockets, HTTP connections) can refuse in time instead of
// failing when none is left: libzmq aborts the whole process then.
package fdlimit
