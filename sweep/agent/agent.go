// Package agent serves the sweep control API from dgsend and dgrecv
// (--agent): it describes the agent, runs one trial at a time from a JSON
// configuration, reports its status and results, and exposes the current
// trial's metrics.
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cloudprofiler-go/cp/internal/cli"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/tsc"
)

// Version is reported in AgentInfo.
const Version = "0.1.0"

// Options are fixed for the agent's lifetime.
type Options struct {
	Role  string
	Token string // "" only on loopback (see CheckBind)
	Clock *tsc.Clock
	// Receiver agents: the data endpoints every trial binds (or connects).
	Endpoints []string
	Connect   bool
	CPUs      []int
	IOThreads int
	Logf      func(format string, args ...any)
}

// Agent runs trials one at a time.
type Agent struct {
	opts   Options
	mu     sync.Mutex
	status sweep.TrialStatus
	stop   func()               // stops the running trial
	coll   prometheus.Collector // the running (or last) trial's metrics
	// profileDir holds the last profiled trial's logs (served as a tar).
	profileDir string
}

// New returns an idle agent.
func New(opts Options) (*Agent, error) {
	if opts.Role != sweep.RoleSender && opts.Role != sweep.RoleReceiver {
		return nil, fmt.Errorf("agent role must be %q or %q", sweep.RoleSender, sweep.RoleReceiver)
	}
	if opts.Clock == nil {
		return nil, errors.New("agent needs a TSC clock")
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &Agent{opts: opts, status: sweep.TrialStatus{Role: opts.Role, State: sweep.StateIdle}}, nil
}

// CheckBind refuses to serve the control API on a non-loopback address
// without a token: anyone who can reach it could otherwise drive load.
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("control address %q: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("control address %s is not loopback: give a shared --token (or --token-file) so that only the controller can drive this agent", addr)
}

// Handler serves the /v1 control API.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+sweep.PathInfo, func(w http.ResponseWriter, r *http.Request) { cli.ReplyJSON(w, http.StatusOK, a.Info()) })
	mux.HandleFunc("GET "+sweep.PathTrial, func(w http.ResponseWriter, r *http.Request) { cli.ReplyJSON(w, http.StatusOK, a.Status()) })
	mux.HandleFunc("POST "+sweep.PathTrial, a.handleStart)
	mux.HandleFunc("POST "+sweep.PathStop, func(w http.ResponseWriter, r *http.Request) { cli.ReplyJSON(w, http.StatusOK, a.Stop()) })
	mux.HandleFunc("GET "+sweep.PathProfile, a.handleProfile)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		cli.ReplyError(w, http.StatusNotFound, fmt.Errorf("no %s %s; the API is GET %s, GET|POST %s, POST %s", r.Method, r.URL.Path, sweep.PathInfo, sweep.PathTrial, sweep.PathStop))
	})
	return cli.RequireToken(a.opts.Token, mux)
}

// Info describes the agent.
func (a *Agent) Info() sweep.AgentInfo {
	host, _ := os.Hostname()
	a.mu.Lock()
	state := a.status.State
	a.mu.Unlock()
	return sweep.AgentInfo{Role: a.opts.Role, Host: host, Cores: runtime.NumCPU(), TSCHz: a.opts.Clock.Hz, TSCNative: tsc.Native,
		Version: Version, PID: os.Getpid(), DataEndpoints: a.opts.Endpoints, State: state}
}

// Status returns the current or last trial's status.
func (a *Agent) Status() sweep.TrialStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// Stop asks the running trial to finish early.
func (a *Agent) Stop() sweep.TrialStatus {
	a.mu.Lock()
	stop := a.stop
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
	return a.Status()
}

const maxRequest = 1 << 20

func (a *Agent) handleStart(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest))
	if err != nil {
		cli.ReplyError(w, http.StatusBadRequest, fmt.Errorf("read request: %w", err))
		return
	}
	a.mu.Lock()
	if s := a.status.State; s == sweep.StateStarting || s == sweep.StateRunning {
		a.mu.Unlock()
		cli.ReplyError(w, http.StatusConflict, fmt.Errorf("trial %d is %s: stop it first (POST %s)", a.status.ID, s, sweep.PathStop))
		return
	}
	id := a.status.ID + 1
	a.status = sweep.TrialStatus{ID: id, Role: a.opts.Role, State: sweep.StateStarting, Started: time.Now()}
	a.mu.Unlock()

	var start func(*profiling) (prometheus.Collector, func(), func() (*sweep.TrialStatus, error), error)
	var profile string
	switch a.opts.Role {
	case sweep.RoleSender:
		var cfg sweep.SenderTrial
		if err := decodeStrict(body, &cfg); err != nil {
			a.setFailed(id, err)
			cli.ReplyError(w, http.StatusBadRequest, err)
			return
		}
		profile = cfg.Profile
		start = func(p *profiling) (prometheus.Collector, func(), func() (*sweep.TrialStatus, error), error) {
			return a.startSender(cfg, p)
		}
	default:
		var cfg sweep.ReceiverTrial
		if err := decodeStrict(body, &cfg); err != nil {
			a.setFailed(id, err)
			cli.ReplyError(w, http.StatusBadRequest, err)
			return
		}
		profile = cfg.Profile
		start = func(p *profiling) (prometheus.Collector, func(), func() (*sweep.TrialStatus, error), error) {
			return a.startReceiver(cfg, p)
		}
	}
	prof, err := a.newProfiling(id, profile)
	if err != nil {
		a.setFailed(id, err)
		cli.ReplyError(w, http.StatusBadRequest, err)
		return
	}
	coll, stop, wait, err := start(prof)
	if err != nil {
		prof.close()
		a.setFailed(id, err)
		cli.ReplyError(w, http.StatusBadRequest, err)
		return
	}
	a.mu.Lock()
	a.status.State, a.stop, a.coll = sweep.StateRunning, stop, coll
	st := a.status
	a.mu.Unlock()
	a.opts.Logf("trial %d started", id)
	go func() {
		res, err := wait()
		if perr := prof.close(); perr != nil && err == nil { // every record on disk before "done"
			err = fmt.Errorf("profile: %w", perr)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.stop = nil
		if prof != nil {
			a.profileDir = prof.dir
		}
		if err != nil {
			a.status.State, a.status.Error = sweep.StateFailed, err.Error()
			a.opts.Logf("trial %d failed: %v", id, err)
			return
		}
		a.status.State, a.status.Sender, a.status.Receiver = sweep.StateDone, res.Sender, res.Receiver
		a.opts.Logf("trial %d done", id)
	}()
	cli.ReplyJSON(w, http.StatusAccepted, st)
}

func (a *Agent) setFailed(id int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status.ID == id {
		a.status.State, a.status.Error = sweep.StateFailed, err.Error()
	}
}

func (a *Agent) startSender(c sweep.SenderTrial, prof *profiling) (prometheus.Collector, func(), func() (*sweep.TrialStatus, error), error) {
	sc, err := scenarios.Load(c.Scenario)
	if err != nil {
		return nil, nil, nil, err
	}
	sh, err := sender.ParseShape(c.Shape)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := sender.New(sender.Config{Endpoints: c.Endpoints, SenderID: c.SenderID, Threads: c.Threads, Rate: c.Rate,
		Duration: c.Duration, Warmup: c.Warmup, StartAt: c.StartAt, Shape: sh, BucketSize: c.BucketSize, Scenario: sc, Overflow: sender.Overflow(c.Overflow),
		Idle: sender.Idle(c.Idle), LateThreshold: c.LateThreshold, HWM: hwm(c.HWM), CPUs: a.opts.CPUs, IOThreads: a.opts.IOThreads,
		Clock: a.opts.Clock, EndTimeout: 5 * time.Second, Profile: prof.profiler(), Handlers: prof.handlers()})
	if err != nil {
		return nil, nil, nil, err
	}
	wait := func() (*sweep.TrialStatus, error) {
		defer s.Close()
		res, err := s.Run()
		if err != nil {
			return nil, err
		}
		return &sweep.TrialStatus{Sender: res}, nil
	}
	return s, s.Stop, wait, nil
}

func (a *Agent) startReceiver(c sweep.ReceiverTrial, prof *profiling) (prometheus.Collector, func(), func() (*sweep.TrialStatus, error), error) {
	r, err := receiver.New(receiver.Config{Endpoints: a.opts.Endpoints, Connect: a.opts.Connect, Schema: c.Schema, Drain: c.Drain,
		ExpectStreams: c.ExpectStreams, EndTimeout: c.EndTimeout, WorkPerTuple: c.WorkPerTuple, RingCapacity: c.Ring,
		HWM: hwm(c.HWM), Duration: c.Duration, CPUs: a.opts.CPUs, IOThreads: a.opts.IOThreads, Clock: a.opts.Clock, Logf: a.opts.Logf,
		Profile: prof.profiler(), Handlers: prof.handlers()})
	if err != nil {
		return nil, nil, nil, err
	}
	wait := func() (*sweep.TrialStatus, error) {
		defer r.Close()
		res, err := r.Run()
		if err != nil {
			return nil, err
		}
		return &sweep.TrialStatus{Receiver: res}, nil
	}
	return r, r.Stop, wait, nil
}

func hwm(v int) int {
	if v <= 0 {
		return 1000
	}
	return v
}

// Describe implements prometheus.Collector: the metrics are those of the
// current trial, so their set changes (an unchecked collector).
func (a *Agent) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector with the running (or last)
// trial's metrics.
func (a *Agent) Collect(ch chan<- prometheus.Metric) {
	a.mu.Lock()
	c := a.coll
	a.mu.Unlock()
	if c != nil {
		c.Collect(ch)
	}
}

func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad trial configuration: %w", err)
	}
	return nil
}

// ReadToken returns the token from a flag value or a file ("" if neither).
func ReadToken(token, file string) (string, error) {
	if token != "" && file != "" {
		return "", errors.New("give --token or --token-file, not both")
	}
	if file == "" {
		return token, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return t, nil
}

// Serve runs the agent's control API and metrics on addr until stop is
// called; it returns the bound address.
func Serve(addr string, a *Agent, serve func(addr string, c prometheus.Collector, extra map[string]http.Handler) (string, func(), error)) (string, func(), error) {
	if err := CheckBind(addr, a.opts.Token); err != nil {
		return "", nil, err
	}
	return serve(addr, a, map[string]http.Handler{"/v1/": a.Handler()})
}
