package httpapi

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Collectors serves several collectors as one.
type Collectors []prometheus.Collector

// Describe implements prometheus.Collector.
func (cs Collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (cs Collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}

// Switch serves the metrics of the collectors set last: an agent's
// current (or last) trial. Their set changes from trial to trial, so it
// describes none (an unchecked collector).
type Switch struct {
	mu sync.Mutex
	cs Collectors
}

// Set makes cs the metrics served.
func (s *Switch) Set(cs Collectors) {
	s.mu.Lock()
	s.cs = cs
	s.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (s *Switch) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (s *Switch) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	cs.Collect(ch)
}
