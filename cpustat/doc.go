// Package cpustat measures, from /proc, where a process's CPU time goes
// and what else the host is doing: each of its threads' CPU and the time
// it waited runnable but not running (schedstat), its involuntary context
// switches, and the host's busy, stolen and idle time, from which the CPU
// of every other process follows (host busy minus ours).
//
// A run samples it at its stage accounting's period, so that every trial
// carries the evidence to say whether the host was quiet while it ran: a
// sweep on a shared VM measures the noise instead of requiring a quiet
// machine. Threads are named by role: the hot threads register their
// thread ids (emission threads, lanes, the consumer); libzmq's I/O and
// reaper threads are recognised by the names libzmq gives them; the rest
// (the Go runtime, other goroutines) count as "other".
//
// Linux only: elsewhere Sample reports ErrUnsupported and runs carry no
// host accounting (docs/measuring.md).
package cpustat
