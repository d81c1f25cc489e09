package diagnose

// Diagnoser labels a stream of snapshots of cumulative counters: it takes
// the deltas, applies StreamsDiagnoser's carry-over of negative queues
// (§4.3: a queue computed as submitted - processed that reads negative
// means the downstream's count ran ahead of the upstream's between two
// reads; its magnitude is added to the downstream's Δtotal_msgs of the
// next snapshot, so that it is not blamed for the work it already did),
// and runs the Labeler.
type Diagnoser struct {
	g         *Graph
	lb        *Labeler
	prevTotal []uint64
	prevWait  []uint64
	carry     []uint64
	c         Counters
	primed    bool
}

// NewDiagnoser returns a diagnoser for g.
func NewDiagnoser(g *Graph) *Diagnoser {
	n := g.Len()
	return &Diagnoser{g: g, lb: NewLabeler(g), prevTotal: make([]uint64, n), prevWait: make([]uint64, n),
		carry: make([]uint64, n), c: NewCounters(n)}
}

// Step takes one snapshot: cumulative total and wait counters and the
// current queues, by module. The first call only sets the baseline and
// returns false; later calls label every module into out and return true.
// A counter that went backwards (a restarted stage) counts as no change.
func (d *Diagnoser) Step(total, wait []uint64, queue []int64, out []Label) bool {
	if !d.primed {
		copy(d.prevTotal, total)
		copy(d.prevWait, wait)
		d.primed = true
		d.noteNegative(queue)
		return false
	}
	for m := range total {
		var dt, dw uint64
		if total[m] > d.prevTotal[m] {
			dt = total[m] - d.prevTotal[m]
		}
		if wait[m] > d.prevWait[m] {
			dw = wait[m] - d.prevWait[m]
		}
		d.c.Total[m] = dt + d.carry[m]
		d.c.Wait[m] = dw
		d.c.Queue[m] = queue[m]
	}
	copy(d.prevTotal, total)
	copy(d.prevWait, wait)
	d.noteNegative(queue)
	d.lb.Label(&d.c, out)
	return true
}

// noteNegative sets the carry-over of this snapshot's negative queues.
func (d *Diagnoser) noteNegative(queue []int64) {
	for m, q := range queue {
		d.carry[m] = 0
		if q < 0 && d.g.Modules[m].HasQueue {
			d.carry[m] = uint64(-q)
		}
	}
}

// Stretch is a stretch of consecutive snapshots [From, To] (inclusive) in
// which a module had one label.
type Stretch struct {
	Module   int `json:"-"`
	From, To int
}

// Len is the run's number of snapshots.
func (r Stretch) Len() int { return r.To - r.From + 1 }

// StallRuns returns every module's runs of STALLED of at least confirm
// snapshots (a positive is confirmed over consecutive snapshots, §2.2.1),
// from labels[snapshot][module].
func StallRuns(labels [][]Label, modules, confirm int) []Stretch {
	confirm = max(confirm, 1)
	var out []Stretch
	for m := 0; m < modules; m++ {
		start := -1
		for s := 0; s <= len(labels); s++ {
			stalled := s < len(labels) && labels[s][m] == Stalled
			switch {
			case stalled && start < 0:
				start = s
			case !stalled && start >= 0:
				if s-start >= confirm {
					out = append(out, Stretch{Module: m, From: start, To: s - 1})
				}
				start = -1
			}
		}
	}
	return out
}

// Live confirms stalls as snapshots arrive (dgsend and dgrecv log them):
// a module's stall is confirmed at its confirm-th consecutive STALLED
// snapshot and ends at the first other label.
type Live struct {
	confirm int
	streak  []int
}

// NewLive tracks n modules.
func NewLive(n, confirm int) *Live { return &Live{confirm: max(confirm, 1), streak: make([]int, n)} }

// Event is a change of a module's confirmed stall.
type Event struct {
	Module    int
	Started   bool // true: confirmed now; false: ended now
	Snapshots int  // the stall's length so far, in snapshots
}

// Step takes one snapshot's labels and returns the confirmed stalls that
// started or ended with it.
func (l *Live) Step(labels []Label, events []Event) []Event {
	for m, lab := range labels {
		if lab == Stalled {
			l.streak[m]++
			if l.streak[m] == l.confirm {
				events = append(events, Event{Module: m, Started: true, Snapshots: l.streak[m]})
			}
			continue
		}
		if l.streak[m] >= l.confirm {
			events = append(events, Event{Module: m, Snapshots: l.streak[m]})
		}
		l.streak[m] = 0
	}
	return events
}
