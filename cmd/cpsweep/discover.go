package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/sweep/discover"
)

// discovery is the agents' DNS sources (--senders-from, --receivers-from)
// and the counts the sweep waits for.
type discovery struct {
	senders, receivers     string
	nSenders, nReceivers   int
	timeout                time.Duration
	dnsServer              string
	senderSrc, receiverSrc discover.Source
	resolver               *net.Resolver
	// jobs: job agents (cpjob --agent-addr) by DNS, with or without the
	// senders' and receivers' sources.
	jobs   string
	nJobs  int
	jobSrc discover.Source
}

// Default control ports, as the agents' help and the manifests use them.
const senderPort, receiverPort, jobPort = 9101, 9102, 9103

func (d *discovery) register(f *pflag.FlagSet) {
	f.StringVar(&d.senders, "senders-from", "", "find the sender agents by DNS instead of --sender: dns:NAME[:PORT] (every A/AAAA record is an agent; port 9101 by default) or srv:NAME (SRV records), e.g. a Kubernetes headless Service")
	f.StringVar(&d.receivers, "receivers-from", "", "find the receiver agents by DNS instead of --receiver (port 9102 by default)")
	f.IntVar(&d.nSenders, "sender-count", 1, "with --senders-from: wait for exactly this many sender agents")
	f.IntVar(&d.nReceivers, "receiver-count", 1, "with --receivers-from: wait for exactly this many receiver agents")
	f.StringVar(&d.jobs, "jobs-from", "", "find the job agents (cpjob --agent-addr) by DNS instead of --job-agent (port 9103 by default)")
	f.IntVar(&d.nJobs, "job-count", 1, "with --jobs-from: wait for exactly this many job agents")
	f.StringVar(&d.dnsServer, "dns-server", "", "with --senders-from/--receivers-from: ask this DNS server (host:port) instead of the system's")
	f.DurationVar(&d.timeout, "discover-timeout", 2*time.Minute, "with --senders-from/--receivers-from: how long to wait for the counts; fewer agents then is an error (exit 5)")
}

// check parses the sources; the counts are part of the plan, checked
// before anything runs.
func (d *discovery) check(o *options) error {
	if d.jobs != "" {
		if len(o.jobAgents) > 0 {
			return errors.New("give job agents by address (--job-agent) or by DNS (--jobs-from), not both")
		}
		if d.nJobs < 1 || d.nJobs > 64 {
			return fmt.Errorf("--job-count must be 1..64, got %d", d.nJobs)
		}
		var err error
		if d.jobSrc, err = discover.Parse(d.jobs, jobPort); err != nil {
			return fmt.Errorf("--jobs-from: %w", err)
		}
	}
	if (d.senders == "") != (d.receivers == "") {
		return errors.New("give both --senders-from and --receivers-from, or neither")
	}
	if d.senders == "" && d.jobs == "" {
		return nil
	}
	if d.senders == "" {
		return d.checkResolver()
	}
	if len(o.senders) > 0 || len(o.receivers) > 0 {
		return errors.New("give agents by address (--sender/--receiver) or by DNS (--senders-from/--receivers-from), not both")
	}
	if d.nSenders < 1 || d.nSenders > 1024 || d.nReceivers < 1 || d.nReceivers > 1024 {
		return fmt.Errorf("--sender-count and --receiver-count must be 1..1024, got %d and %d", d.nSenders, d.nReceivers)
	}
	var err error
	if d.senderSrc, err = discover.Parse(d.senders, senderPort); err != nil {
		return fmt.Errorf("--senders-from: %w", err)
	}
	if d.receiverSrc, err = discover.Parse(d.receivers, receiverPort); err != nil {
		return fmt.Errorf("--receivers-from: %w", err)
	}
	return d.checkResolver()
}

// checkResolver checks what every DNS source shares: the wait and the
// server asked.
func (d *discovery) checkResolver() error {
	if d.timeout < time.Second || d.timeout > time.Hour {
		return fmt.Errorf("--discover-timeout must be 1s..1h, got %v", d.timeout)
	}
	if d.dnsServer != "" {
		var err error
		if d.resolver, err = discover.ResolverFor(d.dnsServer); err != nil {
			return fmt.Errorf("--dns-server: %w", err)
		}
	}
	return nil
}

// resolve waits for the agents and returns their control addresses. Too
// few (or too many) after the wait is an agent failure (exit 5). Both
// sources share one --discover-timeout: the receivers get what the senders
// left of it.
func (d *discovery) resolve(ctx context.Context) (senders, receivers []string, err error) {
	deadline := time.Now().Add(d.timeout)
	if senders, err = d.find(ctx, deadline, d.senderSrc, d.nSenders, "sender"); err != nil {
		return nil, nil, err
	}
	if receivers, err = d.find(ctx, deadline, d.receiverSrc, d.nReceivers, "receiver"); err != nil {
		return nil, nil, err
	}
	return senders, receivers, nil
}

// resolveJobs waits for the job agents (--jobs-from).
func (d *discovery) resolveJobs(ctx context.Context) ([]string, error) {
	return d.find(ctx, time.Now().Add(d.timeout), d.jobSrc, d.nJobs, "job")
}

// find waits until deadline for want agents of a role at src.
func (d *discovery) find(ctx context.Context, deadline time.Time, src discover.Source, want int, role string) ([]string, error) {
	last := -1
	addrs, err := discover.Agents(ctx, src, discover.Options{Want: want, Timeout: max(time.Until(deadline), 0), Resolver: d.resolver, Server: d.dnsServer, Progress: func(n int) {
		if n != last {
			fmt.Fprintf(os.Stderr, "cpsweep: waiting for %d %s agents at %s: %d answer\n", want, role, src, n)
			last = n
		}
	}})
	if err != nil {
		return nil, &sweep.AgentError{Agent: src.String(), Err: err}
	}
	fmt.Fprintf(os.Stderr, "cpsweep: %s agents at %s: %v\n", role, src, addrs)
	return addrs, nil
}
