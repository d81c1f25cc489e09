package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

// Run is the --agent mode of dgsend and dgrecv: it serves the control API
// and metrics on addr until ctx is done (the binary's signal), which stops
// a running trial first.
func Run(ctx context.Context, opts Options, addr, token, tokenFile string, calibrate time.Duration) error {
	s, err := Listen(opts, addr, token, tokenFile, calibrate)
	if err != nil {
		return err
	}
	<-ctx.Done()
	s.Close()
	return nil
}

// Serving is an agent serving its API, its metrics and TSC probes.
type Serving struct {
	Addr  string // the control address as bound
	name  string
	agent *Agent
	srv   *httpapi.Server
	resp  *tsc.Responder
}

// Listen serves an agent of opts.Role on addr (its control API and
// metrics; TSC probes on the same port number, UDP, or opts.ProbeAddr),
// with the token from token or tokenFile, until Close. A job serves its
// accounting this way (cpjob --agent-addr) while it runs.
func Listen(opts Options, addr, token, tokenFile string, calibrate time.Duration) (*Serving, error) {
	if addr == "" {
		return nil, fmt.Errorf("an agent needs --metrics-addr (its control and metrics address)")
	}
	if opts.Role == nil {
		return nil, errors.New("an agent needs a role (sendagent.Role or recvagent.Role)")
	}
	tok, err := httpapi.ServerToken(token, tokenFile, addr)
	if err != nil {
		return nil, err
	}
	if opts.Clock, err = tsc.NewClock(calibrate); err != nil {
		return nil, err
	}
	opts.Token = tok
	name := map[string]string{protocol.RoleSender: "dgsend", protocol.RoleReceiver: "dgrecv", protocol.RoleJob: "cpjob"}[opts.Role.Name()]
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, termsafe.Escape(fmt.Sprintf(format, args...))) // a trial's errors quote brokers
	}
	a, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		a.Close()
		flag := "--metrics-addr"
		if opts.Role.Name() == protocol.RoleJob {
			flag = "--agent-addr"
		}
		return nil, fmt.Errorf("listen for the control API on %s: %w (pick another with %s)", addr, err, flag)
	}
	bound := ln.Addr().String()
	// The agent is also a TSC client: a probe responder, by default on
	// the control address's port number (UDP), its API next to the agent's.
	probeAddr := opts.ProbeAddr
	if probeAddr == "" {
		probeAddr = bound
	}
	resp, err := tsc.NewResponder(probeAddr)
	if err != nil {
		ln.Close()
		a.Close()
		return nil, fmt.Errorf("TSC probes on udp %s: %w (pick another with --probe-addr)", probeAddr, err)
	}
	clock := &probeapi.Client{Responder: resp, Hz: opts.Clock.Hz}
	srv, err := Serve(ln, a, clock)
	if err != nil {
		ln.Close()
		resp.Close()
		a.Close()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "%s: agent ready: control http://%s/v1, metrics on http://%s/metrics, TSC probes on udp %s\n", name, bound, bound, resp.Addr())
	return &Serving{Addr: bound, name: name, agent: a, srv: srv, resp: resp}, nil
}

// Close stops a running trial, the server and the probe responder, and
// removes the profiled trials' files not fetched.
func (s *Serving) Close() {
	s.agent.Stop()
	fmt.Fprintf(os.Stderr, "%s: agent stopping\n", s.name)
	s.srv.Close()
	s.resp.Close()
	s.agent.Close()
}
