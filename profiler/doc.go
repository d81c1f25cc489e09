// Package profiler is the Cloudprofiler profiling library (§5): a process
// opens named channels, each with a handler and a log format, and calls
// LogTS(tupleID) at instrumentation points; Close flushes everything.
// Handlers range from Null (a call and nothing else) through periodic
// counters and samplers (Downsample, XoY, FirstLast) to Identity and the
// buffered identity handler, which fills fixed blocks on the calling
// thread and compresses and writes them in the background.
//
// A channel belongs to one writer goroutine (like the paper's per-thread
// channels), except with the multi-writer counter (MPC).
package profiler

// ThreadName is the kernel name (comm) of the profiler's background
// threads (compression and writing): the host accounting (package cpustat)
// counts them as the profiler's own CPU by this name. At most 15 bytes.
const ThreadName = "cp-profiler"
