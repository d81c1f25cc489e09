package sender

import (
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/internal/zmqraw"
	"github.com/cloudprofiler-go/cp/wire"
)

// sendEnd delivers the stream's end marker, retrying until EndTimeout.
func (t *thread) sendEnd(s *Sender) error {
	reason := "completed"
	switch {
	case t.err != nil:
		reason = "error"
	case t.interrupted:
		reason = "interrupted"
	}
	msg, err := wire.AppendEnd(nil, t.stream, wire.End{
		Tuples: t.emittedTuples.Load(), Buckets: t.emittedBuckets.Load(),
		DroppedBuckets: t.droppedBuckets.Load(), DroppedTuples: t.droppedTuples.Load(), Reason: reason,
	})
	if err != nil {
		return err
	}
	// The run's connection state is taken when the marker is queued: a
	// peer that leaves after that (a receiver that got everything and
	// exits) is no fault of the run.
	defer t.link.settle()
	if !s.stop.Load() { // a stop ends the run within a second
		t.link.awaitFirst(min(s.cfg.EndTimeout, connectGrace))
	}
	timeout := s.cfg.EndTimeout
	if s.stop.Load() || t.link.peers.Load() == 0 {
		// a stop ends the run within a second; with no peer, waiting longer delivers nothing
		timeout = min(timeout, stoppedEndTimeout)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := t.out.Send(msg, false)
		if err == nil {
			return nil
		}
		if err != zmqraw.ErrAgain || time.Now().After(deadline) {
			return fmt.Errorf("end marker of stream %d to %s not delivered within %v: %w", t.stream, t.endpoint, timeout, err)
		}
	}
}
