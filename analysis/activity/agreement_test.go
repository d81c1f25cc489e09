package activity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/rundir"
)

// The graph's explanation says how long its top activity's thread waited
// for a CPU in the profiled trial: the graph has no activity for a CPU a
// thread did not get, so at a host-CPU limit its answer is the thread the
// missing CPU delayed, and the reader needs the number to weigh it.
func TestAgreementSaysTheTopThreadsWaitForACPU(t *testing.T) {
	const doc = `{"limiting_stage": "host CPU", "limiting_evidence": "host busy 71% of 2 CPUs", "result": {"last_pass": 9743000, "first_fail": 10160000, "trials": [
	  {"n": 17, "rate": 10160000, "purpose": "repeat", "verdict": {"pass": false}, "next_limit": {"stage": "host CPU", "method": "backlog", "tuples_per_s": 10250000, "through": "stream0"}},
	  {"n": 18, "rate": 10720000, "purpose": "profile", "verdict": {"pass": false}, "hosts": [
	    {"node": "sender0", "cpus": 2, "host_busy": 0.71, "threads": [{"name": "thread0", "cores": 0.37, "runqueue": 0.17}, {"name": "zmq-io", "cores": 0.3, "runqueue": 0.35}]}]}
	]}}`
	var s rundir.Summary
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	r := &Report{SystemCP: []Share{{Worker: "sender0/thread0", Kind: Send.String(), Value: 0.8}}}
	a := r.AgreementWith(&s)
	if len(a.Explanations) != 3 {
		t.Fatalf("%+v", a)
	}
	g := a.Explanations[2]
	if g.Stage != "sender0/thread0" || !strings.HasSuffix(g.Detail, "; its thread waited runnable 17% of the profiled trial") {
		t.Fatalf("graph: %+v", g)
	}
	if sr := a.Explanations[1]; sr.Stage != "host CPU" || !strings.Contains(sr.Detail, "of stream0, held back by the host's CPUs") || !sr.AboveAnswer {
		t.Fatalf("service rates: %+v", sr)
	}
	if a.Agree || !strings.Contains(a.Statement, "a host CPU limit shows in the graph only as its threads' wait for a CPU") ||
		!strings.Contains(a.Statement, "service rates: host CPU (through stream0); activity graph: sender0/thread0 (its thread waited runnable 17% of the profiled trial)") {
		t.Fatalf("statement: %s", a.Statement)
	}
	// Beside a spinning process the sender's thread itself waited a third
	// of the time: by the rule that names the trial's limit, its sends
	// were stretched by the host's CPUs.
	s.Result.Trials[1].Hosts[0].Threads[0].Runqueue = 0.33
	a = r.AgreementWith(&s)
	if g := a.Explanations[2]; g.Stage != "host CPU" || !strings.HasSuffix(g.Detail, "held back by the host's CPUs: sender0/thread0 waited runnable 33% of the profiled trial") {
		t.Fatalf("graph beside a spinner: %+v", g)
	}
	if !a.Agree || !strings.Contains(a.Statement, "activity graph: host CPU (sender0/thread0's send, sender0/thread0 waited runnable 33% of the profiled trial)") {
		t.Fatalf("statement: %s", a.Statement)
	}
	// With its runnable wait apportioned, the wait for a CPU is the
	// graph's own top activity, and the graph names the host itself.
	r = &Report{SystemCP: []Share{{Worker: "sender0/thread0", Kind: CPUWait.String(), Value: 0.78}, {Worker: "sender0/thread0", Kind: Send.String(), Value: 0.15}}}
	a = r.AgreementWith(&s)
	if g := a.Explanations[2]; g.Stage != "host CPU" || g.Detail != "sender0/thread0 waited runnable for a CPU 78% of the system's critical paths" {
		t.Fatalf("graph with cpu-wait: %+v", g)
	}
	if !a.Agree {
		t.Fatalf("statement: %s", a.Statement)
	}
	// An answer that rests on a minority of the windows says so.
	r.Windows = []Result{{HasPath: true}, {}, {}}
	if g := r.AgreementWith(&s).Explanations[2]; !strings.HasSuffix(g.Detail, "; only 1 of 3 windows had a path (in the rest every worker waited on something that logs no activity, such as the transport's I/O threads)") {
		t.Fatalf("graph on 1 of 3 windows: %+v", g)
	}
}
