package agent

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/redact"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/stage"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

// Version is reported in AgentInfo.
const Version = "0.1.0"

// Options are fixed for the agent's lifetime.
type Options struct {
	// Role runs the agent's trials: sendagent.Role (dgsend) or
	// recvagent.Role (dgrecv). Each binary links only its own.
	Role  Role
	Token string // "" only on loopback (see CheckBind)
	Clock *tsc.Clock
	// Receiver agents: the data endpoints every trial binds (or connects).
	Endpoints []string
	Connect   bool
	CPUs      []int
	IOThreads int
	// ProbeAddr is where the agent answers TSC probes (UDP); "" is the
	// control address's host and port number, so that one port number
	// (TCP for control and metrics, UDP for probes) is all a firewall
	// needs to open.
	ProbeAddr string
	// MemoryBudget bounds what a trial may plan to allocate, or a
	// receiver's trial hold in messages (0: half of the host's memory); a
	// request cannot raise it.
	MemoryBudget int64
	Logf         func(format string, args ...any)
}

// Agent runs trials one at a time.
type Agent struct {
	opts    Options
	mu      sync.Mutex
	status  protocol.TrialStatus
	stop    func()         // stops the running trial
	metrics httpapi.Switch // the running (or last) trial's
	// stages is the running (or last) trial's stage accounting (nil:
	// none), whose latest state changes GET /v1/trial/activity serves;
	// stagesTrial is that trial's id.
	stages      *stage.Set
	stagesTrial int
	// stopEarly is a stop asked for while the trial was starting; abort,
	// closed by that stop, ends a sender's preparation early.
	stopEarly bool
	abort     chan struct{}
	// workDir holds the profiled trials' directories; profileDir the last
	// one's logs (served as a tar, then removed).
	workDir    string
	profileDir string
	// jobLag reads the job's lag for info requests (a JobReader role).
	jobLag *jobLagReader
}

// New returns an idle agent.
func New(opts Options) (*Agent, error) {
	if opts.Role == nil {
		return nil, errors.New("an agent needs a role (sendagent.Role or recvagent.Role)")
	}
	if opts.Clock == nil {
		return nil, errors.New("agent needs a TSC clock")
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	a := &Agent{opts: opts, status: protocol.TrialStatus{Role: opts.Role.Name(), State: protocol.StateIdle}}
	if jr, ok := opts.Role.(JobReader); ok {
		a.jobLag = &jobLagReader{read: jr.Lag}
	}
	return a, nil
}

// Close stops a running trial and removes the agent's temporary
// directory (the profiled trials' logs not fetched yet).
func (a *Agent) Close() error {
	a.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workDir == "" {
		return nil
	}
	err := os.RemoveAll(a.workDir)
	a.workDir, a.profileDir = "", ""
	return err
}

// Routes are the /v1 control API's routes (served by Serve, which adds
// the token check, the limits and /metrics).
func (a *Agent) Routes() []httpapi.Route {
	fn := func(pattern string, h http.HandlerFunc) httpapi.Route {
		return httpapi.Route{Pattern: pattern, Handler: h}
	}
	return []httpapi.Route{
		fn("GET "+protocol.PathInfo, func(w http.ResponseWriter, r *http.Request) { httpapi.ReplyJSON(w, http.StatusOK, a.Info()) }),
		fn("GET "+protocol.PathTrial, func(w http.ResponseWriter, r *http.Request) { httpapi.ReplyJSON(w, http.StatusOK, a.Status()) }),
		fn("POST "+protocol.PathTrial, a.handleStart),
		fn("POST "+protocol.PathStop, func(w http.ResponseWriter, r *http.Request) { httpapi.ReplyJSON(w, http.StatusOK, a.Stop()) }),
		fn("GET "+protocol.PathProfile, a.handleProfile),
		fn("GET "+protocol.PathActivity, a.handleActivity),
		fn("/v1/", func(w http.ResponseWriter, r *http.Request) {
			httpapi.ReplyError(w, http.StatusNotFound, fmt.Errorf("no %s %s; the API is GET %s, GET|POST %s, POST %s, GET %s, GET %s", r.Method, r.URL.Path, protocol.PathInfo, protocol.PathTrial, protocol.PathStop, protocol.PathProfile, protocol.PathActivity))
		}),
	}
}

// Info describes the agent.
func (a *Agent) Info() protocol.AgentInfo {
	host, _ := os.Hostname()
	a.mu.Lock()
	state := a.status.State
	a.mu.Unlock()
	info := protocol.AgentInfo{Role: a.opts.Role.Name(), Host: host, Machine: probing.BootID(), Cores: runtime.NumCPU(), TSCHz: a.opts.Clock.Hz, TSCNative: tsc.Native,
		Version: Version, PID: os.Getpid(), DataEndpoints: redact.All(a.opts.Endpoints), State: state}
	if jr, ok := a.opts.Role.(JobReader); ok && jr.Job() != "" {
		info.JobInput = redact.URL(jr.Job())
		switch lag, err := a.jobLag.get(JobLagWait); {
		case err != nil:
			info.JobLagError = err.Error()
		default:
			info.JobLag = &lag
		}
	}
	return info
}

// Status returns the current or last trial's status.
func (a *Agent) Status() protocol.TrialStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// Stop asks the running trial to finish early; a trial that is still
// starting stops as soon as it has started.
func (a *Agent) Stop() protocol.TrialStatus {
	a.mu.Lock()
	stop := a.stop
	if a.status.State == protocol.StateStarting {
		a.stopEarly = true
		if a.abort != nil { // ends the preparation itself, not only what follows it
			close(a.abort)
			a.abort = nil
		}
	}
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
	return a.Status()
}

// maxRequest bounds a trial request: the largest inline configuration
// (a handler configuration and a replay shape) with room to spare.
const maxRequest = 4 << 20

func (a *Agent) handleStart(w http.ResponseWriter, r *http.Request) {
	body, err := httpapi.ReadBody(w, r, maxRequest)
	if err != nil {
		httpapi.ReplyRequestError(w, err)
		return
	}
	trial, err := a.opts.Role.Parse(body, a.opts)
	if err != nil {
		httpapi.ReplyError(w, http.StatusBadRequest, fmt.Errorf("bad trial configuration: %w", err))
		return
	}
	a.mu.Lock()
	if s := a.status.State; s == protocol.StateStarting || s == protocol.StateRunning {
		a.mu.Unlock()
		httpapi.ReplyError(w, http.StatusConflict, fmt.Errorf("trial %d is %s: stop it first (POST %s)", a.status.ID, s, protocol.PathStop))
		return
	}
	id := a.status.ID + 1
	a.status = protocol.TrialStatus{ID: id, Role: a.opts.Role.Name(), State: protocol.StateStarting, Started: time.Now()}
	a.stopEarly = false
	abort := make(chan struct{})
	a.abort = abort
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.abort == abort {
			a.abort = nil
		}
		a.mu.Unlock()
	}()

	prof, err := a.newProfiling(id, trial.Profile(), trial.StagePeriod())
	if err != nil {
		a.setFailed(id, err)
		httpapi.ReplyError(w, http.StatusBadRequest, err)
		return
	}
	run, err := trial.Start(Env{Options: a.opts, Profile: prof.profiler(), Handlers: prof.handlers(), Abort: abort})
	if err != nil {
		a.discard(prof)
		a.setFailed(id, err)
		code := http.StatusBadRequest
		var coded *CodedError
		if errors.As(err, &coded) {
			code = coded.Code
		}
		httpapi.ReplyError(w, code, err)
		return
	}
	a.mu.Lock()
	stop, wait := run.Stop, run.Wait
	a.status.State, a.stop = protocol.StateRunning, stop
	a.metrics.Set(run.Metrics)
	a.stages, a.stagesTrial = run.Stages, id
	st := a.status
	stopNow := a.stopEarly // a stop that came while the trial was starting
	a.mu.Unlock()
	if stopNow {
		stop()
	}
	a.opts.Logf("trial %d started", id)
	go a.finish(id, wait, prof)
	httpapi.ReplyJSON(w, http.StatusAccepted, st)
}

// finish waits for trial id to end and records its outcome, once every
// profile record is on disk.
func (a *Agent) finish(id int, wait func() (*protocol.TrialStatus, error), prof *profiling) {
	res, err := wait()
	if perr := prof.close(); perr != nil { // every record on disk before "done"
		err = errors.Join(err, perr)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stop = nil
	if prof != nil {
		a.keepProfile(prof.dir)
	}
	if err != nil {
		a.status.State, a.status.Error = protocol.StateFailed, err.Error()
		a.opts.Logf("trial %d failed: %v", id, err)
		return
	}
	a.status.State, a.status.Sender, a.status.Receiver, a.status.Job = protocol.StateDone, res.Sender, res.Receiver, res.Job
	a.opts.Logf("trial %d done", id)
}

func (a *Agent) setFailed(id int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status.ID == id {
		a.status.State, a.status.Error = protocol.StateFailed, err.Error()
	}
}

// Serve serves the agent's control API, its metrics and, when clock is
// set, its TSC client's API on ln (an address the caller bound, to learn
// its port first), with the agent's token on every route.
func Serve(ln net.Listener, a *Agent, clock *probeapi.Client) (*httpapi.Server, error) {
	routes := a.Routes()
	if clock != nil {
		routes = append(routes, clock.Routes()...)
	}
	return httpapi.Serve(httpapi.ServerConfig{Name: "agent", Listener: ln, Token: a.opts.Token, Routes: routes, Metrics: &a.metrics})
}
