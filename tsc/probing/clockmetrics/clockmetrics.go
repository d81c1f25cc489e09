package clockmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/tsc/probing"
)

// Gauges exports the latest relation of every pair to Prometheus: MinRTT,
// the bound's half-width by method, the width of the alpha interval in
// ppm, the probe count and the status (1: a strict bound exists).
type Gauges struct {
	mu     sync.Mutex
	rf     *probing.RelationFile
	rounds int
}

// Set replaces the relation the gauges show.
func (g *Gauges) Set(rf *probing.RelationFile) {
	g.mu.Lock()
	g.rf, g.rounds = rf, g.rounds+1
	g.mu.Unlock()
}

var (
	pairLabels = []string{"node", "reference"}
	descMinRTT = prometheus.NewDesc("cp_clock_min_rtt_seconds", "The MinRTT the paper's bound uses: the larger of the smallest round trips from the reference to the node before and after (e = MinRTT/2).", pairLabels, nil)
	descBound  = prometheus.NewDesc("cp_clock_bound_half_width_seconds", "Half-width of the error bound of one translated timestamp (mid-window for the tighter method).", append(pairLabels, "method"), nil)
	descAlpha  = prometheus.NewDesc("cp_clock_alpha_width_ppm", "Width of the interval of TSC ratios consistent with every probe, in ppm.", pairLabels, nil)
	descProbes = prometheus.NewDesc("cp_clock_probes", "Probes the relation was computed from.", pairLabels, nil)
	descOK     = prometheus.NewDesc("cp_clock_status_ok", "1 when a strict bound exists for the pair, 0 when the linear model broke (clock step, migration).", pairLabels, nil)
	descRounds = prometheus.NewDesc("cp_clock_relations_total", "Relations computed since the start.", nil, nil)
)

// Describe implements prometheus.Collector.
func (g *Gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMinRTT, descBound, descAlpha, descProbes, descOK, descRounds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (g *Gauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	rf, rounds := g.rf, g.rounds
	g.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descRounds, prometheus.CounterValue, float64(rounds))
	if rf == nil {
		return
	}
	for _, r := range rf.Relations {
		ok := 0.0
		if r.Status == "ok" {
			ok = 1
		}
		ch <- prometheus.MustNewConstMetric(descOK, prometheus.GaugeValue, ok, r.Node, r.Reference)
		ch <- prometheus.MustNewConstMetric(descProbes, prometheus.GaugeValue, float64(r.Probes), r.Node, r.Reference)
		if r.Status == "ok" {
			ch <- prometheus.MustNewConstMetric(descAlpha, prometheus.GaugeValue, r.AlphaPPM, r.Node, r.Reference)
		}
		if c := r.Compare; c != nil {
			ch <- prometheus.MustNewConstMetric(descMinRTT, prometheus.GaugeValue, max(c.MinRTTNs[0], c.MinRTTNs[1])/1e9, r.Node, r.Reference)
			if r.PaperStatus == "ok" {
				ch <- prometheus.MustNewConstMetric(descBound, prometheus.GaugeValue, c.PaperNs/1e9, r.Node, r.Reference, "paper")
			}
			if r.Status == "ok" {
				ch <- prometheus.MustNewConstMetric(descBound, prometheus.GaugeValue, c.TighterNs/1e9, r.Node, r.Reference, "tighter")
			}
		}
	}
}
