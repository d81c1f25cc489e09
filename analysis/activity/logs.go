package activity

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cloudprofiler-go/cp/analysis"
	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/stage"
)

// activityReader reads one worker's activities in time order from its
// channel's segments: each state change opens the state it names and ends
// the one before; the items an activity processed are the difference of
// the counts the two changes carry. Segments are merged by start, and an
// activity that overlaps the one before (at a seam) is dropped: the graph
// needs one activity at a time per worker.
type activityReader struct {
	segments []*segment
	last     int64 // the end of the last activity handed out
	started  bool
	done     bool
	refused  int
	overflow string // why the worker's activities stopped early (ErrHeldLimit)
}

// next is the worker's next activity; ok is false after the last.
func (r *activityReader) next() (Activity, bool) {
	for {
		var best *segment
		for _, sg := range r.segments {
			if sg.peek() && (best == nil || sg.head.StartNs < best.head.StartNs) {
				best = sg
			}
		}
		if best == nil {
			r.done = true
			return Activity{}, false
		}
		a := best.head
		best.have = false
		if r.started && a.StartNs < r.last {
			continue
		}
		r.started, r.last = true, a.EndNs
		return a, true
	}
}

func (r *activityReader) problems() []string {
	var out []string
	for _, sg := range r.segments {
		out = append(out, sg.problems()...)
	}
	if r.refused > 0 {
		out = append(out, fmt.Sprintf("%s on %s: %d activities out of order; skipped", r.segments[0].src.Channel, r.segments[0].src.Node, r.refused))
	}
	if r.overflow != "" {
		out = append(out, fmt.Sprintf("%s on %s: %s; the graph stopped there", r.segments[0].src.Channel, r.segments[0].src.Node, r.overflow))
	}
	return out
}

// segment is one activity log being read.
type segment struct {
	src   analysis.Log
	kinds []Kind
	run   *analysis.Joins
	f     *os.File
	br    *profiler.BlockReader
	tl    *Timeline
	recs  []profiler.Record
	i     int
	head  Activity
	have  bool
	over  bool
	err   string
	// unbounded: state changes outside the clock relation's window.
	unbounded int
}

// peek reads up to the segment's next activity (head); false at its end.
func (sg *segment) peek() bool {
	if sg.have {
		return true
	}
	if sg.over {
		return false
	}
	if sg.br == nil {
		f, err := readfile.Open(sg.src.Path)
		if err != nil {
			sg.err, sg.over = fmt.Sprintf("%s (%s on %s): %v", sg.src.Path, sg.src.Channel, sg.src.Node, err), true
			return false
		}
		sg.f, sg.br, sg.tl = f, profiler.NewBlockReader(f), NewTimeline(sg.kinds)
	}
	for {
		for ; sg.i < len(sg.recs); sg.i++ {
			r := sg.recs[sg.i]
			state, items := stage.ActivityOf(r.ID)
			at, ok := sg.run.At(sg.src.NodeIndex, r.TSC)
			if !ok {
				sg.unbounded++
				sg.tl.Break()
				continue
			}
			if a, ok := sg.tl.Change(at, state, items); ok {
				sg.i++
				sg.head, sg.have = a, true
				return true
			}
		}
		recs, err := sg.br.Next(sg.recs[:0])
		if err != nil {
			if !errors.Is(err, io.EOF) {
				sg.err = fmt.Sprintf("%s (%s on %s): %v; the records before it are in the graph", sg.src.Path, sg.src.Channel, sg.src.Node, err)
			}
			sg.over = true
			sg.f.Close()
			return false
		}
		sg.recs, sg.i = recs, 0
	}
}

func (sg *segment) problems() []string {
	var out []string
	if sg.err != "" {
		out = append(out, sg.err)
	}
	if sg.br != nil {
		for _, c := range sg.br.Corruptions {
			out = append(out, fmt.Sprintf("%s (%s on %s): damaged at offset %d (%s); skipped", sg.src.Path, sg.src.Channel, sg.src.Node, c.Offset, c.Reason))
		}
	}
	if sg.tl != nil && sg.tl.Bad > 0 {
		out = append(out, fmt.Sprintf("%s on %s: %d state changes with an unknown state or out of order; skipped", sg.src.Channel, sg.src.Node, sg.tl.Bad))
	}
	if sg.unbounded > 0 {
		out = append(out, fmt.Sprintf("%s on %s: %d state changes outside the clock relation's window; skipped", sg.src.Channel, sg.src.Node, sg.unbounded))
	}
	return out
}
