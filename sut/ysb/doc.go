// Package ysb is the Yahoo Streaming Benchmark as a job on the Benthos
// stream engine, the reference system under test of docs/sut.md: ad
// events read from a broker (cp_input), the event filter (views only), the
// projection, the join with campaigns held in a real Redis, counts per
// campaign in event-time windows (the engine's system_window buffer), and
// the windows' counts written to a broker (cp_output).
//
// The engine runs the pipeline: its input, buffer and processor threads,
// backpressure and windows. This package adds the two operators YSB needs
// that the engine's core lacks, ysb_redis_join and ysb_window_count, and
// the campaign table, which it derives from the scenario exactly as the
// harness does, so that the harness knows every window's count.
package ysb
