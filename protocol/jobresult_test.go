package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

const goodJob = `{"name":"ysb","edges":[["join","window"]],"reads":["jetstream:ysb.in"],"writes":["jetstream:ysb.out"],"stage_series":{"period_ns":100000000,"tsc_hz":1e9,"tsc":[1,2],"unix_ns":[10,20],
"stages":[{"name":"join","kind":"operator","states":["waiting","busy","blocked"],"from":0,"state_ns":[[0,1],[0,2],[0,0]],"items":[0,5],"no_queue":true},
{"name":"window","kind":"operator","states":["waiting","busy","blocked"],"from":1,"state_ns":[[0],[0],[0]],"items":[0],"no_queue":true}]},"injected":[{"operator":"join","from_unix_ns":10,"to_unix_ns":20}],
"go_runtime":{"cpu_s":2.5,"gc_cpu_s":0.85,"gc_pause_s":0.012,"gc_cycles":140,"gogc":5}}`

// TestJobResultValidate: a job's result from the network is a valid
// series of operators, with edges between them only.
func TestJobResultValidate(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"good", "", "", ""},
		{"edge to nowhere", `["join","window"]`, `["join","sink"]`, "not between two of the job's operators"},
		{"self edge", `["join","window"]`, `["join","join"]`, "not between two"},
		{"not an operator", `"kind":"operator","states":["waiting","busy","blocked"],"from":1`, `"kind":"consumer","states":["idle","working"],"from":1`, "states for a consumer"},
		{"a name with a slash", `"name":"ysb"`, `"name":"y/sb"`, "no '/'"},
		{"no series", `"stage_series"`, `"other"`, "without a stage series"},
		{"items go back", `"items":[0,5]`, `"items":[5,0]`, "decrease"},
		{"a stall of no operator", `"operator":"join"`, `"operator":"sink"`, "an injected stall"},
		{"a stall that ends first", `"to_unix_ns":20`, `"to_unix_ns":5`, "an injected stall"},
		{"a topic without its driver", `"jetstream:ysb.in"`, `"ysb.in"`, "want driver:subject"},
		{"a topic with a space", `"jetstream:ysb.out"`, `"jetstream:ysb out"`, "want driver:subject"},
		{"a topic of control bytes", `"jetstream:ysb.out"`, `"jetstream:\u001b[2J"`, "want driver:subject"},
		{"too many topics", `"reads":["jetstream:ysb.in"]`, `"reads":[` + strings.Repeat(`"a:b",`, MaxJobTopics) + `"a:c"]`, "17 topics"},
		{"the collector above the job's CPU", `"gc_cpu_s":0.85`, `"gc_cpu_s":3.5`, "exceed the job's"},
		{"negative runtime seconds", `"gc_pause_s":0.012`, `"gc_pause_s":-1`, "want 0 to"},
		{"a GOGC below off", `"gogc":5`, `"gogc":-7`, "GOGC -7"},
		{"a rate's spread out of bounds", `"injected":[`, `"service_rates":[{"stage":"join","kind":"operator","method":"busy_time","status":"not_converged","tuples":5,"error":7}],"injected":[`, "spread 7"},
		{"a rate on a thread its series is not on", `"injected":[`, `"service_rates":[{"stage":"join","kind":"operator","method":"busy_time","status":"not_converged","tuples":5,"thread":"t9"}],"injected":[`, "on thread"},
		{"a stall of an hour", `"to_unix_ns":20`, `"to_unix_ns":3600000000010`, "an injected stall"},
	} {
		var r JobResult
		if err := json.Unmarshal([]byte(strings.Replace(goodJob, tc.from, tc.to, 1)), &r); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err := r.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzJobResult: whatever a job agent sends, Validate answers without
// panicking, and a result it passes can be indexed as the diagnosis does.
func FuzzJobResult(f *testing.F) {
	f.Add([]byte(goodJob))
	f.Add([]byte(`{"name":"x","stage_series":{"period_ns":1,"tsc_hz":1,"tsc":[],"unix_ns":[],"stages":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r JobResult
		if json.Unmarshal(b, &r) != nil || r.Validate() != nil {
			return
		}
		n := len(r.StageSeries.TSC)
		for _, st := range r.StageSeries.Stages {
			if st.From+len(st.Items) != n {
				t.Fatalf("stage %s: from %d + %d samples != %d", st.Name, st.From, len(st.Items), n)
			}
		}
	})
}
