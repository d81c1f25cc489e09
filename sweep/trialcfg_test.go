package sweep

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sweep/agent/recvagent"
	"github.com/cloudprofiler-go/cp/sweep/agent/sendagent"
	"github.com/cloudprofiler-go/cp/trialcfg"
)

// fill sets every field of the struct v points to to a non-zero value.
func fill(t *testing.T, v any) {
	t.Helper()
	s := reflect.ValueOf(v).Elem()
	for i := range s.NumField() {
		f := s.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(7 + i))
		case reflect.String:
			f.SetString("x" + s.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("%s.%s: a %s; teach fill", s.Type(), s.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestTrialSettingsAreDefinedOnce: every setting of package trialcfg
// reaches the sender's and the receiver's configuration from the plan
// through the agents' protocol, with no step that copies fields one by
// one (a new field needs no code here); and the plan's JSON stays flat,
// as summary.json has always had it.
func TestTrialSettingsAreDefinedOnce(t *testing.T) {
	var p TrialPlan
	fill(t, &p.Sender)
	fill(t, &p.Receiver)
	fill(t, &p.Agent)
	// a filter's predicate is parsed by the agent: a real one, over the
	// ad events it names
	p.ExpectFilter = "event_type == view"
	ads, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	p.ScenarioSpec = ads
	st := p.senderTrial([]string{"tcp://127.0.0.1:1"}, 0, 1, 1000)
	wire, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back = st
	back.Sender, back.Agent = trialcfg.Sender{}, trialcfg.Agent{}
	if err := json.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	cfg, err := sendagent.Config(back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Sender, p.Sender) || !reflect.DeepEqual(cfg.Agent, p.Agent) {
		t.Errorf("sender settings: plan %+v %+v, sender.Config %+v %+v", p.Sender, p.Agent, cfg.Sender, cfg.Agent)
	}
	rt := p.receiverTrial(0)
	if wire, err = json.Marshal(rt); err != nil {
		t.Fatal(err)
	}
	rback := rt
	rback.Receiver, rback.Agent = trialcfg.Receiver{}, trialcfg.Agent{}
	if err := json.Unmarshal(wire, &rback); err != nil {
		t.Fatal(err)
	}
	rcfg := recvagent.Config(rback, []string{"tcp://127.0.0.1:1"}, false)
	if !reflect.DeepEqual(rcfg.Receiver, p.Receiver) || !reflect.DeepEqual(rcfg.Agent, p.Agent) {
		t.Errorf("receiver settings: plan %+v %+v, receiver.Config %+v %+v", p.Receiver, p.Agent, rcfg.Receiver, rcfg.Agent)
	}
	plan, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]json.RawMessage
	if err := json.Unmarshal(plan, &flat); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"threads", "bucket_size", "overflow", "idle", "schema", "ring", "end_timeout_ns", "stage_period_ns", "sut_processes", "duration_ns"} {
		if _, ok := flat[key]; !ok {
			t.Errorf("the plan's JSON has no top-level %q: %s", key, plan)
		}
	}
	for _, nested := range []string{"Sender", "Receiver", "Agent"} {
		if _, ok := flat[nested]; ok {
			t.Errorf("the plan's JSON nests %q: %s", nested, plan)
		}
	}
}
