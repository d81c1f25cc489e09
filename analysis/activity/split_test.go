package activity

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestSystemCPLeavesTheScheduleOut: the consumer-bound sweep's profiled
// trial ranked sender pacing 88.3%, send 6.8%, consume 4.8%; the system's
// own ranking leaves the schedule out and renormalizes the rest, and the
// text says what the pacing share is.
func TestSystemCPLeavesTheScheduleOut(t *testing.T) {
	r := &Report{CP: []Share{
		{Worker: "sender0/thread0", Kind: "pacing", Value: 0.883},
		{Worker: "sender0/thread0", Kind: "send", Value: 0.068},
		{Worker: "receiver0/consumer", Kind: "consume", Value: 0.049},
	}}
	r.splitInput()
	if math.Abs(r.InputShare-0.883) > 1e-9 || len(r.SystemCP) != 2 {
		t.Fatalf("input %.3f, system %+v", r.InputShare, r.SystemCP)
	}
	sum := 0.0
	for _, s := range r.SystemCP {
		sum += s.Value
	}
	if top, _ := r.TopSystem(); top.Kind != "send" || math.Abs(sum-1) > 1e-9 {
		t.Fatalf("top %+v, shares add to %.3f", top, sum)
	}
	var out bytes.Buffer
	r.WriteText(&out, false)
	if !strings.Contains(out.String(), "the input's schedule (senders waiting for their next slot, pacing): 88.3%") ||
		strings.Contains(out.String(), "pacing      88") {
		t.Fatalf("text:\n%s", out.String())
	}
	// Only the schedule on the paths: no system share to rank.
	only := &Report{CP: []Share{{Worker: "sender0/thread0", Kind: "pacing", Value: 1}}}
	only.splitInput()
	if _, ok := only.TopSystem(); ok || only.InputShare != 1 {
		t.Fatalf("pacing alone: %+v", only)
	}
}
