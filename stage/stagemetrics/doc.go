// Package stagemetrics serves a stage.Set's accounting as Prometheus
// metrics (docs/metrics.md). It is apart from package stage so that a
// program that accounts its stages (a job's operators, through the
// embeddable API) links no Prometheus client.
package stagemetrics
