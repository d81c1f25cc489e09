// Package stagemetrics serves what is known of pipeline stages as
// Prometheus metrics (docs/metrics.md): a stage.Set's accounting, in our
// names and in Flink's, and the live invariants a watcher checks on them.
// It is apart from package stage so that a program that accounts its
// stages (a job's operators, through the embeddable API) links no
// Prometheus client.
package stagemetrics
