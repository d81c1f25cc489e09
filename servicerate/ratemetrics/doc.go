// Package ratemetrics serves a tracker's service-rate estimates as
// cp_stage_service_rate (docs/metrics.md), apart from package servicerate
// so that its readers link no Prometheus client.
package ratemetrics
