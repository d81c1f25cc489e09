package activity

import (
	"math"
	"strconv"
	"strings"

	"github.com/cloudprofiler-go/cp/analysis"

	"github.com/cloudprofiler-go/cp/stage"
)

// StageKinds maps a stage's state indices (package stage) to activity
// kinds, by the stage's name as dgsend and dgrecv give it (thread0,
// lane1, consumer) or as a job's trace does (op.join: an operator, of any
// name); ok is false for a stage with no activities.
func StageKinds(name string) (kinds []Kind, ok bool) {
	switch {
	case strings.HasPrefix(name, analysis.OperatorPrefix) && len(name) > len(analysis.OperatorPrefix):
		return []Kind{stage.OpWaiting: Waiting, stage.OpBusy: Busy, stage.OpBlocked: Blocked}, true
	case name == "consumer":
		return []Kind{stage.Idling: Idle, stage.Working: Consume}, true
	case numbered(name, "thread"):
		return []Kind{stage.Pacing: Pacing, stage.Sending: Send, stage.Pushing: Blocked}, true
	case numbered(name, "lane"):
		return []Kind{stage.Waiting: RecvWait, stage.Decoding: Decode, stage.Starved: FreeWait}, true
	}
	return nil, false
}

func numbered(name, prefix string) bool {
	n, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 16)
	return err == nil
}

// Timeline turns one stage's state changes, in order, into its
// activities: each change opens the state it names and ends the one
// before; the items an activity processed are the difference of the
// counts the two changes carry. The last change's activity has no end
// yet (Open).
type Timeline struct {
	kinds     []Kind
	open      Activity
	openItems uint64
	have      bool
	// Bad counts the changes that named an unknown state or went back in
	// time (skipped).
	Bad int
}

// NewTimeline starts the timeline of a stage with these kinds.
func NewTimeline(kinds []Kind) *Timeline { return &Timeline{kinds: kinds} }

// Change records that the stage entered state at ns having processed
// items items so far; it returns the activity the change ended, if any.
func (t *Timeline) Change(ns int64, state int, items uint64) (ended Activity, ok bool) {
	if t.have {
		ended = t.open
		ended.EndNs = ns
		ended.Items = uint32(min(items-t.openItems, math.MaxUint32))
		if ok = ended.EndNs >= ended.StartNs; !ok {
			t.Bad++
		}
	}
	if state < 0 || state >= len(t.kinds) {
		t.Bad++
		t.have = false
		return ended, ok
	}
	t.open, t.openItems, t.have = Activity{Kind: t.kinds[state], StartNs: ns}, items, true
	return ended, ok
}

// Break forgets the open activity: the changes after it were lost, so
// where it ended is unknown.
func (t *Timeline) Break() { t.have = false }

// Open is the activity the last change opened, ended at ns (for a stage
// known to be still in it then); ok is false when there is none.
func (t *Timeline) Open(ns int64) (Activity, bool) {
	if !t.have || ns < t.open.StartNs {
		return Activity{}, false
	}
	a := t.open
	a.EndNs = ns
	return a, true
}
