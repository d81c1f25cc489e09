package sweep

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
	sendtally "github.com/cloudprofiler-go/cp/sender/tally"
	"github.com/cloudprofiler-go/cp/sweep/agent/sendagent"
	"github.com/cloudprofiler-go/cp/sweep/remote"
	"github.com/cloudprofiler-go/cp/sweep/search"
	"github.com/cloudprofiler-go/cp/sweep/verdict"
	"github.com/cloudprofiler-go/cp/trialcfg"

	"github.com/cloudprofiler-go/cp/cpustat"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/sender"
)

// fakeAgent answers the control API in-process; its behaviour picks how
// the trial goes.
type fakeAgent struct {
	role     string
	behave   string // ok, refuse, capacity, fail, failonce (the first trial), hang, die, noprofile, late (done a few polls after the others)
	srv      *httptest.Server
	mu       sync.Mutex
	polls    int
	started  int
	stopped  int
	profiled int // trials started with a handler configuration
	lastBody []byte
}

func newFake(t *testing.T, role, behave string) *fakeAgent {
	f := &fakeAgent{role: role, behave: behave}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+protocol.PathInfo, func(w http.ResponseWriter, r *http.Request) {
		info := protocol.AgentInfo{Role: role, State: protocol.StateIdle}
		if role == protocol.RoleReceiver {
			info.DataEndpoints = []string{"tcp://*:5555"}
		}
		_ = json.NewEncoder(w).Encode(info)
	})
	mux.HandleFunc("POST "+protocol.PathTrial, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.started++
		var body json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.lastBody = body
		var trial struct{ Profile *profiler.Handlers }
		if json.Unmarshal(body, &trial) == nil && trial.Profile != nil {
			f.profiled++
		}
		switch f.behave {
		case "refuse":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"bad trial configuration: threads must be 1..256"}`))
			return
		case "capacity":
			w.WriteHeader(protocol.StatusCapacity)
			_, _ = w.Write([]byte(`{"error":"rate above the send cost"}`))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(protocol.TrialStatus{State: protocol.StateRunning})
	})
	mux.HandleFunc("GET "+protocol.PathTrial, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.polls++
		polls, started := f.polls, f.started
		f.mu.Unlock()
		st := protocol.TrialStatus{State: protocol.StateRunning}
		switch {
		case f.behave == "hang" && polls > 2:
			time.Sleep(remote.ControlTimeout + time.Second) // a poll that never answers in time
		case (f.behave == "fail" || f.behave == "failonce" && started == 1) && polls > 2:
			st = protocol.TrialStatus{State: protocol.StateFailed, Error: "bind tcp://*:5555: address in use"}
		case f.behave == "late" && polls <= 6:
		case polls > 2:
			st.State = protocol.StateDone
			if role == protocol.RoleSender {
				st.Sender = &sendtally.Result{TargetRate: 1000, Threads: 1, BucketSize: 1, Emitted: 1000, ScheduledTups: 1000}
				if f.behave == "late" {
					st.Sender.Scenario = "late" // told apart from the others
				}
				// A host that other work keeps busy (95% busy, 0.2 cores of it
				// ours): always, or in the first trial only.
				if f.behave == "busy" || f.behave == "busyonce" && started == 1 {
					st.Sender.Host = &cpustat.Record{Summary: cpustat.Summary{Seconds: 1, CPUs: 2, HostBusy: 0.95, Process: 0.2}}
				}
			} else {
				st.Receiver = &tally.Result{Consumed: 1000, Complete: true}
			}
		}
		_ = json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("GET "+protocol.PathProfile, func(w http.ResponseWriter, r *http.Request) {
		if f.behave == "noprofile" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"no profiled trial's logs are waiting on this agent"}`))
			return
		}
		tw := tar.NewWriter(w)
		_ = tw.WriteHeader(&tar.Header{Name: "counters.json", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("{}"))
		_ = tw.Close()
	})
	mux.HandleFunc("POST "+protocol.PathStop, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.stopped++
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(protocol.TrialStatus{State: protocol.StateDone})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAgent) client() *remote.Agent {
	return remote.New(strings.TrimPrefix(f.srv.URL, "http://"), "")
}

func testPlan(t *testing.T) TrialPlan {
	p := TrialPlan{
		Receiver: trialcfg.Receiver{Schema: "synthetic", EndTimeout: time.Second},
		Sender:   trialcfg.Sender{Threads: 1, BucketSize: 1, Overflow: "block", Idle: "sleep"},
		Duration: 300 * time.Millisecond,
		Scenario: "synthetic-100",
	}
	if err := p.Resolve(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunTrialTellsAgentFaultsFromFailedRates: only a sender's refusal of
// a rate above its send cost is a failed trial; every other refusal, a
// failed, hung or dead agent is an *AgentError naming the agent.
func TestRunTrialTellsAgentFaultsFromFailedRates(t *testing.T) {
	for _, tc := range []struct {
		name           string
		recv, send     string
		agentErr, pass bool
		rule, says     string
	}{
		{name: "healthy", recv: "ok", send: "ok", pass: true},
		{name: "sender refuses the configuration", recv: "ok", send: "refuse", agentErr: true, says: "threads must be"},
		{name: "receiver refuses", recv: "refuse", send: "ok", agentErr: true, says: "start receiver"},
		{name: "sender above its send cost", recv: "ok", send: "capacity", rule: verdict.RuleSendCost},
		{name: "receiver fails mid-trial", recv: "fail", send: "ok", agentErr: true, says: "address in use"},
		{name: "sender stops answering", recv: "ok", send: "hang", agentErr: true, says: "stopped answering"},
		{name: "sender dies", recv: "ok", send: "die", agentErr: true, says: "stopped answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv, send := newFake(t, protocol.RoleReceiver, tc.recv), newFake(t, protocol.RoleSender, tc.send)
			c := &Controller{Senders: []*remote.Agent{send.client()}, Receivers: []*remote.Agent{recv.client()}, Plan: testPlan(t), AgentTimeout: time.Second}
			if _, err := c.Prepare(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tc.send == "die" {
				go func() { time.Sleep(300 * time.Millisecond); send.srv.CloseClientConnections(); send.srv.Close() }()
			}
			tr, err := c.RunTrial(context.Background(), 1000, "ramp")
			var ae *AgentError
			if tc.agentErr != errors.As(err, &ae) {
				t.Fatalf("error %v, want an agent error: %v", err, tc.agentErr)
			}
			if tc.agentErr {
				if !strings.Contains(err.Error(), tc.says) {
					t.Errorf("error %q does not say %q", err, tc.says)
				}
				if want := map[bool]*fakeAgent{true: send, false: recv}[strings.Contains(tc.name, "sender")]; ae.Agent != want.client().Addr {
					t.Errorf("blamed %s", ae.Agent)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Verdict.Pass != tc.pass {
				t.Errorf("verdict %+v", tr.Verdict)
			}
			if tc.rule != "" && (len(tr.Verdict.Checks) != 1 || tr.Verdict.Checks[0].Rule != tc.rule || tr.Verdict.Pass) {
				t.Errorf("verdict %+v, want only %s failing", tr.Verdict, tc.rule)
			}
			if tc.send == "capacity" && recv.stopped == 0 {
				t.Error("the receiver was not stopped after the sender refused")
			}
		})
	}
}

// TestTrialsCarryTheirWorkloadInline: what reaches a sender agent is the
// scenario and the shape themselves, never a name of a file.
func TestTrialsCarryTheirWorkloadInline(t *testing.T) {
	recv, send := newFake(t, protocol.RoleReceiver, "ok"), newFake(t, protocol.RoleSender, "ok")
	p := testPlan(t)
	p.Shape = "step:1x@1s,2x@1s"
	p.Stalls = []inject.Stall{{Stage: "consumer", For: time.Second}, {Stage: "thread0", For: time.Second}}
	p.DecodeWork = time.Millisecond
	if err := p.Resolve(); err != nil {
		t.Fatal(err)
	}
	c := &Controller{Senders: []*remote.Agent{send.client()}, Receivers: []*remote.Agent{recv.client()}, Plan: p}
	if _, err := c.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunTrial(context.Background(), 1000, "ramp"); err != nil {
		t.Fatal(err)
	}
	var got protocol.SenderTrial
	if err := json.Unmarshal(send.lastBody, &got); err != nil {
		t.Fatal(err)
	}
	if got.Scenario.Schema != "synthetic" || got.Scenario.Size != 100 || got.Shape.Kind != "step" || len(got.Shape.Mults) != 2 {
		t.Fatalf("sent %+v", got)
	}
	if len(got.Stalls) != 1 || got.Stalls[0].Stage != "thread0" {
		t.Errorf("the sender got the stalls %+v, want its thread's only", got.Stalls)
	}
	var rt protocol.ReceiverTrial
	if err := json.Unmarshal(recv.lastBody, &rt); err != nil {
		t.Fatal(err)
	}
	if len(rt.Stalls) != 1 || rt.Stalls[0].Stage != "consumer" || rt.DecodeWork != time.Millisecond {
		t.Errorf("the receiver got %+v and %v of decode work, want the consumer's stall and 1ms", rt.Stalls, rt.DecodeWork)
	}
	if err := sendagent.Validate(got); err != nil {
		t.Fatalf("the controller sent a trial the agent would refuse: %v", err)
	}
}

func TestCheckPlan(t *testing.T) {
	good := testPlan(t)
	fast := Search{Method: "fast", Fast: search.FastPlan{Start: 1000}}
	for _, tc := range []struct {
		name    string
		edit    func(*TrialPlan, *Search, **profiler.Handlers)
		problem string // "" = valid
	}{
		{"valid", func(*TrialPlan, *Search, **profiler.Handlers) {}, ""},
		{"bucket 0", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.BucketSize = 0 }, "bucket size"},
		{"threads 0", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Threads = 0 }, "--threads"},
		{"overflow", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Overflow = "maybe" }, "overflow"},
		{"idle", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Idle = "nap" }, "idle"},
		{"schema", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Schema = "xml" }, "schema"},
		{"ring", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Ring = 1000 }, "ring"},
		{"work", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.WorkPerTuple = time.Hour }, "work"},
		{"duration", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Duration = 0 }, "duration"},
		{"rules", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.Rules.BacklogGrowth = 2 }, "backlog"},
		{"search method", func(_ *TrialPlan, s *Search, _ **profiler.Handlers) { s.Method = "binary" }, "--search"},
		{"start rate", func(_ *TrialPlan, s *Search, _ **profiler.Handlers) { s.Fast.Start = 0 }, "start rate"},
		{"linear", func(_ *TrialPlan, s *Search, _ **profiler.Handlers) {
			*s = Search{Method: "linear", Linear: search.LinearPlan{From: 5, To: 1, Step: 1}}
		}, "linear"},
		{"unknown handler", func(_ *TrialPlan, _ *Search, h **profiler.Handlers) {
			*h = &profiler.Handlers{Default: profiler.Config{Handler: "nosuch"}}
		}, "unknown handler"},
		{"missing parameter", func(_ *TrialPlan, _ *Search, h **profiler.Handlers) {
			*h = &profiler.Handlers{Default: profiler.Config{Handler: "xoy", Path: "a.log"}}
		}, "xoy"},
		{"absolute log path", func(_ *TrialPlan, _ *Search, h **profiler.Handlers) {
			*h = &profiler.Handlers{Default: profiler.Config{Handler: "buffered", Path: "/etc/x.log"}}
		}, "relative"},
		{"stalls of a lane the plan cannot see yet", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) {
			p.Stalls = []inject.Stall{{Stage: "lane3", At: time.Second, For: time.Second}, {Stage: "thread0", For: time.Second}}
		}, ""},
		{"a stall of an unknown stage", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) {
			p.Stalls = []inject.Stall{{Stage: "pipe", For: time.Second}}
		}, "--stall"},
		{"decode work", func(p *TrialPlan, _ *Search, _ **profiler.Handlers) { p.DecodeWork = time.Second }, "decode work"},
	} {
		var h *profiler.Handlers
		p, s := good, fast
		tc.edit(&p, &s, &h)
		err := CheckPlan(p, s, 1, "", h, 0.9)
		var pe *PlanError
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.problem != "" && (!errors.As(err, &pe) || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%s: %v, want a plan error about %q", tc.name, err, tc.problem)
		}
	}
}

// A pass well above the first failing rate contradicts the answer; a
// pass at the edge (passed once, then failed its confirmation) does not,
// nor does the profiled trial or the hint's short estimate trial.
func TestContradiction(t *testing.T) {
	trial := func(n int, rate float64, pass bool, purpose string) rundir.Trial {
		return rundir.Trial{N: n, Rate: rate, Purpose: purpose, Verdict: rundir.Verdict{Pass: pass}}
	}
	for _, tc := range []struct {
		name   string
		r      rundir.Result
		wantIt bool
	}{
		{"a host that moved: 40 k passed, 7.1 k failed", rundir.Result{LastPass: 7000, FirstFail: 7100, Trials: []rundir.Trial{
			trial(1, 20e3, true, "ramp"), trial(2, 40e3, true, "ramp"), trial(3, 80e3, false, "ramp"), trial(4, 7100, false, "hint"), trial(5, 7000, true, "confirm")}}, true},
		{"the edge: passed, then failed its confirmation", rundir.Result{LastPass: 90e3, FirstFail: 92e3, Trials: []rundir.Trial{
			trial(1, 92e3, true, "close"), trial(2, 92e3, false, "confirm"), trial(3, 90e3, true, "confirm")}}, false},
		{"a profiled trial above", rundir.Result{LastPass: 90e3, FirstFail: 92e3, Trials: []rundir.Trial{trial(1, 90e3, true, "ramp"), trial(2, 92e3, false, "ramp"), trial(3, 300e3, true, "profile")}}, false},
		{"a short estimate trial above", rundir.Result{LastPass: 9e3, FirstFail: 10e3, Trials: []rundir.Trial{{N: 1, Rate: 20e3, Purpose: rundir.PurposeEstimate, Short: true, Verdict: rundir.Verdict{Pass: true}}, trial(2, 10e3, false, "ramp")}}, false},
		{"nothing failed", rundir.Result{LastPass: 90e3, Trials: []rundir.Trial{trial(1, 90e3, true, "ramp")}}, false},
	} {
		if got := search.Contradiction(&tc.r); (got != "") != tc.wantIt {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

func TestExitCode(t *testing.T) {
	answer := &rundir.Summary{Result: &rundir.Result{LastPass: 100, FirstFail: 200}}
	none := &rundir.Summary{Result: &rundir.Result{FirstFail: 200}}
	for _, tc := range []struct {
		name string
		r    *rundir.Summary
		err  error
		want int
	}{
		{"answer", answer, nil, ExitAnswer},
		{"lower bound only", &rundir.Summary{Result: &rundir.Result{LastPass: 100}}, nil, ExitAnswer},
		{"no rate passed", none, nil, ExitNoRatePassed},
		{"invalid plan", nil, &PlanError{Problems: []string{"x"}}, ExitInvalidPlan},
		{"agent failure", answer, &AgentError{Agent: "a", Err: errors.New("gone")}, ExitAgentFailure},
		{"interrupted", &rundir.Summary{Interrupted: true, Result: &rundir.Result{LastPass: 1}}, nil, ExitInterrupted},
		{"write error", answer, errors.New("disk full"), ExitError},
		{"contradicted", &rundir.Summary{Contradicted: "trial 2 passed at 40 k/s", Result: &rundir.Result{LastPass: 7000, FirstFail: 7100}}, nil, ExitContradicted},
	} {
		if got := ExitCode(tc.r, tc.err); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRateWalksFromThePlanToEveryThread: a rate of the plan (--start 1.2M,
// parsed once by the flag: cmd/internal/cli's tests) reaches every thread
// of every sender as the same share, split by sender.ThreadRate.
func TestRateWalksFromThePlanToEveryThread(t *testing.T) {
	var plan Search
	plan.Fast.Start = 1.2e6
	recv := newFake(t, protocol.RoleReceiver, "ok")
	senders := []*fakeAgent{newFake(t, protocol.RoleSender, "ok"), newFake(t, protocol.RoleSender, "ok")}
	p := testPlan(t)
	p.Threads = 3
	c := &Controller{Receivers: []*remote.Agent{recv.client()}, Senders: []*remote.Agent{senders[0].client(), senders[1].client()}, Plan: p}
	if _, err := c.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunTrial(context.Background(), plan.Fast.Start, "ramp"); err != nil {
		t.Fatal(err)
	}
	var total float64
	for i, s := range senders {
		var st protocol.SenderTrial
		if err := json.Unmarshal(s.lastBody, &st); err != nil {
			t.Fatal(err)
		}
		cfg, err := sendagent.Config(st)
		if err != nil {
			t.Fatal(err)
		}
		perThread := sender.ThreadRate(cfg.Rate, cfg.Threads)
		if cfg.Threads != 3 || math.Abs(perThread-200e3) > 1e-6 {
			t.Errorf("sender %d: %d threads at %.3f tuples/s each, want 3 at 200000", i, cfg.Threads, perThread)
		}
		total += perThread * float64(cfg.Threads)
	}
	if math.Abs(total-1.2e6) > 1e-6 {
		t.Errorf("the threads add up to %.3f tuples/s, want 1.2M", total)
	}
}

// TestOutcomeIsInTheAgentsOrder: the results are in the order the agents
// were given (the run directory names them sender0, sender1, ... by it),
// not the order they finished in: the first sender finishes last.
func TestOutcomeIsInTheAgentsOrder(t *testing.T) {
	recv := newFake(t, protocol.RoleReceiver, "ok")
	late, early := newFake(t, protocol.RoleSender, "late"), newFake(t, protocol.RoleSender, "ok")
	c := &Controller{Receivers: []*remote.Agent{recv.client()}, Senders: []*remote.Agent{late.client(), early.client()}, Plan: testPlan(t), AgentTimeout: 5 * time.Second}
	if _, err := c.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr, err := c.RunTrial(context.Background(), 1000, "ramp")
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.Outcome.Senders; len(s) != 2 || s[0].Scenario != "late" || s[1].Scenario == "late" {
		t.Fatalf("senders in the outcome: %+v, want the late one first, as given", s)
	}
}

// TestWaitAnsweringWaitsForAgentsFoundTooEarly: an agent whose address
// takes no connection yet (a pod in DNS before it is reachable) is waited
// for until it answers; one that never does, only until the timeout.
func TestWaitAnsweringWaitsForAgentsFoundTooEarly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	fake := newFake(t, protocol.RoleSender, "ok")
	go func() {
		time.Sleep(600 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return // the test fails below: the agent never answers
		}
		srv := &http.Server{Handler: fake.srv.Config.Handler}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
	}()
	recv := newFake(t, protocol.RoleReceiver, "ok")
	c := &Controller{Receivers: []*remote.Agent{recv.client()}, Senders: []*remote.Agent{remote.New(addr, "")}}
	start := time.Now()
	c.WaitAnswering(context.Background(), 10*time.Second)
	if took := time.Since(start); took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("waited %v for an agent that answers after 600 ms", took)
	}
	if _, err := c.Senders[0].Info(context.Background()); err != nil {
		t.Errorf("the agent waited for does not answer: %v", err)
	}
	gone := &Controller{Senders: []*remote.Agent{remote.New("127.0.0.1:1", "")}}
	start = time.Now()
	gone.WaitAnswering(context.Background(), time.Second)
	if took := time.Since(start); took < time.Second || took > 3*time.Second {
		t.Errorf("waited %v for an agent that never answers, want the timeout (1 s)", took)
	}
}

// TestEarlierSlackIsBelowTheTrialsGap: the receivers' slack for a
// sender's clock is far below the least time between one trial's last
// tuple and the next trial's start (the senders' and the job's leads),
// so that no tuple of an earlier trial is taken for this one's.
func TestEarlierSlackIsBelowTheTrialsGap(t *testing.T) {
	if gap := senderLead + jobLead; receiver.EarlierSlack*10 > gap {
		t.Errorf("EarlierSlack %v is not far below the %v between trials", receiver.EarlierSlack, gap)
	}
}
