package inject

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Bounds of what may be injected: a fixture, not a way to hang a host.
const (
	MaxStalls     = 64
	MaxStall      = time.Minute
	MaxStallStart = 24 * time.Hour
	MaxSteps      = 64
	MaxWork       = 100 * time.Millisecond // per tuple, or per bucket for decode work
)

// Stall stops one stage from At (after the run's start) for For.
type Stall struct {
	Stage string        `json:"stage"` // consumer, lane<N>, thread<N>
	At    time.Duration `json:"at_ns"`
	For   time.Duration `json:"for_ns"`
}

func (s Stall) String() string { return fmt.Sprintf("%s@%v+%v", s.Stage, s.At, s.For) }

// ParseStall reads "STAGE@START+DURATION", e.g. "consumer@5s+1s".
func ParseStall(spec string) (Stall, error) {
	stage, when, ok := strings.Cut(strings.TrimSpace(spec), "@")
	at, length, ok2 := strings.Cut(when, "+")
	if !ok || !ok2 || stage == "" {
		return Stall{}, fmt.Errorf("stall %q: want STAGE@START+DURATION, e.g. consumer@5s+1s", spec)
	}
	a, err1 := time.ParseDuration(at)
	l, err2 := time.ParseDuration(length)
	if err1 != nil || err2 != nil {
		return Stall{}, fmt.Errorf("stall %q: START and DURATION are durations like 5s or 500ms", spec)
	}
	s := Stall{Stage: stage, At: a, For: l}
	return s, s.validate()
}

func (s Stall) validate() error {
	if s.At < 0 || s.At > MaxStallStart || s.For <= 0 || s.For > MaxStall {
		return fmt.Errorf("stall %v: the start must be 0 to %v and the length above 0 and at most %v", s, MaxStallStart, MaxStall)
	}
	return nil
}

// Stage is a stall's stage kind and index ("lane2": lane, 2; "consumer":
// consumer, 0).
func Stage(name string) (kind string, index int, err error) {
	for _, k := range []string{"lane", "thread"} {
		if rest, ok := strings.CutPrefix(name, k); ok {
			i, err := strconv.Atoi(rest)
			if err != nil || i < 0 || i > 1<<16 {
				return "", 0, fmt.Errorf("stage %q: want %s<N>", name, k)
			}
			return k, i, nil
		}
	}
	if name == "consumer" {
		return name, 0, nil
	}
	return "", 0, fmt.Errorf("stage %.32q: want consumer, lane<N> or thread<N>", name)
}

// CheckStalls validates stalls for a process whose stages are the given
// kinds, with count instances of each indexed kind (lanes or threads).
func CheckStalls(stalls []Stall, kinds map[string]int) error {
	if len(stalls) > MaxStalls {
		return fmt.Errorf("at most %d stalls, got %d", MaxStalls, len(stalls))
	}
	for _, s := range stalls {
		if err := s.validate(); err != nil {
			return err
		}
		kind, i, err := Stage(s.Stage)
		if err != nil {
			return err
		}
		n, ok := kinds[kind]
		if !ok {
			return fmt.Errorf("stall %v: this process has no %s stage", s, kind)
		}
		if kind != "consumer" && i >= n {
			return fmt.Errorf("stall %v: %s%d is the last %s here", s, kind, n-1, kind)
		}
	}
	return nil
}

// OfKind is the stalls of stages of these kinds (consumer, lane, thread).
func OfKind(stalls []Stall, kinds ...string) []Stall {
	var out []Stall
	for _, s := range stalls {
		k, _, err := Stage(s.Stage)
		for _, want := range kinds {
			if err == nil && k == want {
				out = append(out, s)
			}
		}
	}
	return out
}

// Windows are one stage's stalls as [start, end) offsets from the run's
// start, in order.
func Windows(stalls []Stall, stage string) [][2]time.Duration {
	var w [][2]time.Duration
	for _, s := range stalls {
		if s.Stage == stage {
			w = append(w, [2]time.Duration{s.At, s.At + s.For})
		}
	}
	for i := 1; i < len(w); i++ { // few: insertion sort
		for j := i; j > 0 && w[j][0] < w[j-1][0]; j-- {
			w[j], w[j-1] = w[j-1], w[j]
		}
	}
	return w
}

// Record is what a run had injected, as its result reports it (empty
// lists and 0 when nothing was).
type Record struct {
	Stalls       []Stall       `json:"stalls"`
	DecodeWork   time.Duration `json:"decode_work_ns"`
	WorkSchedule []Step        `json:"work_schedule"`
	// SendWork is a sender's busy work per bucket (dgsend only: absent
	// from a receiver's record).
	SendWork time.Duration `json:"send_work_ns,omitempty"`
}

// NewRecord is the record of a run's injections.
func NewRecord(stalls []Stall, decodeWork time.Duration, schedule []Step) Record {
	return Record{Stalls: append([]Stall{}, stalls...), DecodeWork: decodeWork, WorkSchedule: append([]Step{}, schedule...)}
}

// Step is one phase of a work schedule: Work per tuple from At on.
type Step struct {
	At   time.Duration `json:"at_ns"`
	Work time.Duration `json:"work_ns"`
}

// ParseSchedule reads "WORK@START,..." (e.g. "10us@0s,40us@20s"): the work
// per tuple from each start until the next.
func ParseSchedule(spec string) ([]Step, error) {
	var steps []Step
	for _, part := range strings.Split(spec, ",") {
		w, at, ok := strings.Cut(strings.TrimSpace(part), "@")
		work, err1 := time.ParseDuration(w)
		start, err2 := time.ParseDuration(at)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("work schedule %q: want WORK@START,... e.g. 10us@0s,40us@20s", spec)
		}
		steps = append(steps, Step{At: start, Work: work})
	}
	return steps, CheckSchedule(steps)
}

// CheckSchedule validates a work schedule: at most MaxSteps steps, in
// increasing order of start, each with work from 0 to MaxWork.
func CheckSchedule(steps []Step) error {
	if len(steps) > MaxSteps {
		return fmt.Errorf("a work schedule has at most %d steps, got %d", MaxSteps, len(steps))
	}
	for i, s := range steps {
		if s.Work < 0 || s.Work > MaxWork || s.At < 0 || s.At > MaxStallStart {
			return fmt.Errorf("work schedule step %d (%v@%v): work must be 0 to %v, the start 0 to %v", i, s.Work, s.At, MaxWork, MaxStallStart)
		}
		if i > 0 && s.At <= steps[i-1].At {
			return fmt.Errorf("work schedule: step %d starts at %v, not after step %d (%v)", i, s.At, i-1, steps[i-1].At)
		}
	}
	return nil
}

// WorkAt is the scheduled work at offset d from the run's start (before
// the first step: the first step's).
func WorkAt(steps []Step, d time.Duration) time.Duration {
	if len(steps) == 0 {
		return 0
	}
	w := steps[0].Work
	for _, s := range steps {
		if s.At > d {
			break
		}
		w = s.Work
	}
	return w
}
