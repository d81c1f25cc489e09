// Package dataflow is the accounting a job's author embeds in the job's
// own operators (issue 46, docs/dataflow.md): the operators and the edges
// between them, each operator's state (busy, waiting for its input,
// blocked on its output: FlowDiagnoser's two bits) and items, on the
// harness's stage accounting, and the profiler's points with tuple ids, on
// its profiler. Every call on an operator's hot path is a clock read and
// a few stores, and allocates nothing; the package links no Prometheus
// client, configuration server, sweep, broker client or plotting, so that
// it is light to link into any job.
package dataflow
