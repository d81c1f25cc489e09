package stage

import "github.com/cloudprofiler-go/cp/tsc"

// LabelNames are the diagnosis labels a stage can have (cp_stage_label,
// package stagemetrics).
var LabelNames = [...]string{"HEALTHY", "DONTCARE", "BLOCKED", "STALLED"}

// SetLabels publishes the latest diagnosis (stage name to label), which
// the metrics report as cp_stage_label.
func (s *Set) SetLabels(labels map[string]string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.labels = labels
	s.mu.Unlock()
}

// Labels is the latest diagnosis SetLabels published (the caller must
// not change it).
func (s *Set) Labels() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.labels
}

// HasQueue says whether the stage counts a queue.
func (a *Account) HasQueue() bool { return a.queue != nil }

// Clock is the clock the set's stages read.
func (s *Set) Clock() *tsc.Clock { return s.clock }
