package e2e

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Service rates from the real binaries (docs/service-rate.md): dgrecv's
// consumer at 20 µs of work per tuple can never do more than 50 k tuples/s,
// so its busy-time estimate must lie at or under that (and far above
// nothing), at a load where it is busy about 70% of the time; dgsend
// reports its thread's. At a few tuples a second nothing converges, and
// the JSON then says not_converged with a null rate, never a number; with
// --service-rates=false there are none.
func TestServiceRatesOfTheRealBinaries(t *testing.T) {
	const bound = 50e3 // 1 / 20 µs
	pr := &Pair{Bin: binDir,
		RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1", "--work", "20us"},
		SendArgs: sendArgs("--rate", "35k", "--bucket", "10", "--duration", "3s")}
	pr.Run(t)
	raft, busy, ok := consumerRates(pr.Recv.ServiceRates)
	if !ok {
		t.Fatalf("dgrecv's service_rates %+v: want the consumer by both methods", pr.Recv.ServiceRates)
	}
	v, conv := busy.Value()
	if !conv || v > bound*1.02 || v < bound*0.3 || busy.Utilisation <= 0 || busy.Tuples == 0 {
		t.Fatalf("consumer busy_time %+v: want converged, at most %.0f tuples/s (the work's bound) and above 30%% of it", busy, bound)
	}
	if raft.Periods == 0 || raft.T <= 0 {
		t.Errorf("consumer raftlib %+v: want non-blocking periods and a period T", raft)
	}
	if v, ok := raft.Value(); ok && (v > bound*1.5 || v < bound*0.3) {
		t.Errorf("consumer raftlib %.0f tuples/s, far from the work's bound %.0f", v, bound)
	}
	var thread bool
	for _, r := range pr.Send.ServiceRates {
		thread = thread || (r.Stage == "thread0" && r.Periods > 0)
	}
	if !thread {
		t.Errorf("dgsend's service_rates %+v: want thread0's", pr.Send.ServiceRates)
	}

	idle := &Pair{Bin: binDir,
		RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1"},
		SendArgs: sendArgs("--rate", "5", "--bucket", "1", "--duration", "1s")}
	idle.Run(t)
	var raw struct {
		ServiceRates []map[string]any `json:"service_rates"`
	}
	if err := json.Unmarshal(idle.RecvProc.Stdout.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range raw.ServiceRates {
		if r["stage"] != "consumer" {
			continue
		}
		n++
		if v, present := r["tuples_per_s"]; !present || v != nil || r["status"] != "not_converged" || r["converged"] != false {
			t.Errorf("consumer at 5 tuples/s: %v, want not_converged with tuples_per_s null", r)
		}
	}
	if n != 2 {
		t.Fatalf("consumer estimates at 5 tuples/s: %d, want both methods (%s)", n, idle.RecvProc.Stdout.String())
	}

	off := &Pair{Bin: binDir,
		RecvArgs: []string{"--schema", "synthetic", "--expect-streams", "1", "--service-rates=false"},
		SendArgs: sendArgs("--rate", "1k", "--bucket", "10", "--duration", "300ms", "--service-rates=false")}
	off.Run(t)
	if len(off.Recv.ServiceRates) != 0 || len(off.Send.ServiceRates) != 0 || len(off.Recv.Stages) == 0 {
		t.Errorf("--service-rates=false: %d and %d estimates, %d stages; want none, and the accounting still on",
			len(off.Recv.ServiceRates), len(off.Send.ServiceRates), len(off.Recv.Stages))
	}
	if !bytes.Contains(off.RecvProc.Stdout.Bytes(), []byte(`"service_rates": []`)) {
		t.Error(`--service-rates=false: dgrecv's JSON lacks "service_rates": [] (every field is always present)`)
	}
}
