package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/sweep/protocol"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
)

// Run is the --agent mode of dgsend and dgrecv: it serves the control API
// and metrics on addr until ctx is done (the binary's signal), which stops
// a running trial first.
func Run(ctx context.Context, opts Options, addr, token, tokenFile string, calibrate time.Duration) error {
	if addr == "" {
		return fmt.Errorf("an agent needs --metrics-addr (its control and metrics address)")
	}
	if opts.Role == nil {
		return errors.New("an agent needs a role (sendagent.Role or recvagent.Role)")
	}
	tok, err := httpapi.ServerToken(token, tokenFile, addr)
	if err != nil {
		return err
	}
	if opts.Clock, err = tsc.NewClock(calibrate); err != nil {
		return err
	}
	opts.Token = tok
	name := "dg" + map[string]string{protocol.RoleSender: "send", protocol.RoleReceiver: "recv"}[opts.Role.Name()]
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...) }
	a, err := New(opts)
	if err != nil {
		return err
	}
	defer a.Close() // removes the profiled trials' files not fetched
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for the control API on %s: %w (pick another with --metrics-addr)", addr, err)
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
		return fmt.Errorf("TSC probes on udp %s: %w (pick another with --probe-addr)", probeAddr, err)
	}
	defer resp.Close()
	clock := &probing.Client{Responder: resp, Hz: opts.Clock.Hz}
	srv, err := Serve(ln, a, clock)
	if err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	fmt.Fprintf(os.Stderr, "%s: agent ready: control http://%s/v1, metrics on http://%s/metrics, TSC probes on udp %s\n", name, bound, bound, resp.Addr())
	<-ctx.Done()
	a.Stop()
	fmt.Fprintf(os.Stderr, "%s: agent stopping\n", name)
	return nil
}
