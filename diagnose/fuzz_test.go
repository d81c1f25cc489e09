package diagnose

import (
	"encoding/json"
	"testing"

	"github.com/cloudprofiler-go/cp/stage"
)

// FuzzTimeline feeds arbitrary stage series and a job's edges (a damaged
// or hostile result file given to cpsweep diagnose) to the timeline and
// the analysis: a
// series that passes Validate must be analysed without a panic, and one
// that does not must be refused by BuildTimeline.
func FuzzTimeline(f *testing.F) {
	recv := `{"period_ns":100000000,"tsc_hz":1e9,"tsc":[1,2,3],"unix_ns":[10,20,30],"stages":[
		{"name":"lane0","kind":"lane","states":["waiting","decoding","blocked"],"from":0,"state_ns":[[0,1,2],[0,1,2],[0,0,0]],"items":[0,5,5],"queue":[0,1,1]},
		{"name":"consumer","kind":"consumer","states":["idle","working"],"from":0,"state_ns":[[0,1,1],[0,1,2]],"items":[0,5,5],"queue":[0,3,9],"queue_capacity":8},
		{"name":"stream0","kind":"network","states":[],"from":1,"state_ns":[],"items":[4,5],"no_queue":true}]}`
	send := `{"period_ns":100000000,"tsc_hz":1e9,"tsc":[5,6],"unix_ns":[15,25],"stages":[
		{"name":"thread0","kind":"sender","states":["pacing","sending","blocked"],"from":0,"state_ns":[[0,1],[0,1],[0,9]],"items":[3,9],"queue":[0,1]}]}`
	job := `{"period_ns":100000000,"tsc_hz":1e9,"tsc":[4,7],"unix_ns":[12,28],"stages":[
		{"name":"join","kind":"operator","states":["waiting","busy","blocked"],"from":0,"state_ns":[[0,1],[0,9],[0,0]],"items":[0,5],"no_queue":true},
		{"name":"window","kind":"operator","states":["waiting","busy","blocked"],"from":1,"state_ns":[[0],[0],[0]],"items":[0],"queue":[3]}]}`
	f.Add([]byte(recv), []byte(send), []byte(job), "join", "window")
	f.Add([]byte(recv), []byte(`{}`), []byte(job), "window", "join")
	f.Add([]byte(`{"period_ns":1,"tsc_hz":1,"tsc":[],"unix_ns":[],"stages":[]}`), []byte(send), []byte(`{}`), "", "")
	f.Fuzz(func(t *testing.T, r, s, j []byte, from, to string) {
		var rs, ss, js stage.Series
		if json.Unmarshal(r, &rs) != nil || json.Unmarshal(s, &ss) != nil || json.Unmarshal(j, &js) != nil {
			return
		}
		in := Input{Relay: true, Processes: []Process{
			{Node: "receiver0", Role: "receiver", Series: &rs, Lanes: map[uint32]int{0: 0}},
			{Node: "sender0", Role: "sender", Series: &ss, Streams: map[string]uint32{"thread0": 0}},
			{Node: "job0", Role: "job", Job: "ysb", Series: &js, Edges: [][2]string{{from, to}, {"join", "window"}}},
		}}
		tl, err := BuildTimeline(in)
		valid := rs.Validate() == nil && ss.Validate() == nil && js.Validate() == nil
		if !valid {
			if err == nil {
				t.Fatal("an invalid series was accepted")
			}
			return
		}
		if err != nil {
			return // e.g. a network stage not named stream<N>
		}
		d := Analyze(tl, Options{})
		if len(d.Snapshots) > max(tl.Snapshots()-1, 0) || len(d.Summary) != tl.Graph.Len() {
			t.Fatalf("%d snapshots from %d samples, %d summaries for %d modules", len(d.Snapshots), tl.Snapshots(), len(d.Summary), tl.Graph.Len())
		}
	})
}
