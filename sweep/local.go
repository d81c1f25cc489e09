package sweep

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/sweep/remote"
)

// LocalAgents are dgsend/dgrecv agent processes started on loopback, for a
// sweep with no hosts given.
type LocalAgents struct {
	Senders, Receivers []*remote.Agent
	procs              []*exec.Cmd
	logs               []*strings.Builder
}

// FindBinary looks for a sibling binary next to the running executable,
// then on PATH.
func FindBinary(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found next to this program or on PATH (make build puts it in bin/)", name)
	}
	return p, nil
}

var readyRe = regexp.MustCompile(`agent ready: control http://([^/\s]+)/v1`)

// LocalTopology is what local agents are started for.
type LocalTopology struct {
	Senders, Lanes int
	// SUT is a broker as the system under test: the receiver consumes
	// from it on a subject per lane ("": ZeroMQ on loopback ports).
	SUT string
	// Job is a stream processor as the system under test: the receiver
	// reads its output in the group "cp" (unless the output names one)
	// and its lag on its input (nil: none).
	Job *JobPlan
}

// receiverData is the local receiver's data flags.
func (t LocalTopology) receiverData() ([]string, error) {
	switch {
	case t.Job != nil:
		if _, err := driver.Parse(t.Job.Output); err != nil {
			return nil, err
		}
		return []string{"--connect", driver.InGroup(t.Job.Output, driver.JobOutputGroup), "--job-input", t.Job.Input}, nil
	case t.SUT != "": // the receiver consumes from the broker, on subjects of its own
		return []string{"--connect", t.SUT}, nil
	}
	port, err := FreePorts(t.Lanes)
	if err != nil {
		return nil, err
	}
	return []string{"--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port)}, nil
}

// brokersAnswer makes sure that every broker the local agents would use
// takes a connection, so that a broker that is not running is named by
// its URL at once, as the system under test that failed (exit status 8),
// not as an agent that did not become ready.
func (t LocalTopology) brokersAnswer() error {
	var urls []string
	switch {
	case t.Job != nil:
		urls = []string{t.Job.Input, t.Job.Output}
	case t.SUT != "":
		urls = []string{t.SUT}
	}
	for _, u := range urls {
		e, err := driver.Parse(u)
		if err != nil {
			return err
		}
		addr := strings.TrimPrefix(e.Server, "nats://")
		c, err := net.DialTimeout("tcp", addr, driver.ConnectTimeout)
		if err != nil {
			return &AgentError{Agent: e.Where(), System: true,
				Err: fmt.Errorf("the broker %s is not answering (%v): start it, or give its right host and port", e.Where(), err)}
		}
		c.Close()
	}
	return nil
}

// StartLocal starts one receiver agent and t.Senders sender agents on
// loopback, and waits until all are ready.
func StartLocal(ctx context.Context, t LocalTopology) (*LocalAgents, error) {
	senders, lanes := t.Senders, t.Lanes
	if err := t.brokersAnswer(); err != nil {
		return nil, err
	}
	la := &LocalAgents{}
	recvBin, err := FindBinary("dgrecv")
	if err != nil {
		return nil, err
	}
	sendBin, err := FindBinary("dgsend")
	if err != nil {
		return nil, err
	}
	data, err := t.receiverData()
	if err != nil {
		return nil, err
	}
	args := append(data, "--lanes", fmt.Sprint(lanes), "--agent", "--metrics-addr", "127.0.0.1:0")
	c, err := la.start(ctx, recvBin, args...)
	if err != nil {
		la.Close()
		return nil, err
	}
	la.Receivers = append(la.Receivers, c)
	for i := 0; i < senders; i++ {
		c, err := la.start(ctx, sendBin, "--agent", "--metrics-addr", "127.0.0.1:0")
		if err != nil {
			la.Close()
			return nil, err
		}
		la.Senders = append(la.Senders, c)
	}
	return la, nil
}

func (la *LocalAgents) start(ctx context.Context, bin string, args ...string) (*remote.Agent, error) {
	cmd := exec.Command(bin, args...)
	// The agents die with cpsweep, however it ends (a SIGPIPE, a kill):
	// orphaned agents would hold their ports and CPUs and skew the next run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	la.procs = append(la.procs, cmd)
	log := &strings.Builder{}
	la.logs = append(la.logs, log)
	ready := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := readyRe.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case addr := <-ready:
		return remote.New(addr, ""), nil
	case <-exited: // it ended before it was ready: what it said is why
		return nil, fmt.Errorf("the local %s agent ended before it was ready: %s", filepath.Base(bin), lastLine(log.String()))
	case <-time.After(15 * time.Second):
		return nil, fmt.Errorf("the local %s agent did not become ready within 15 s", filepath.Base(bin))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lastLine is the last line an agent wrote ("it said nothing").
func lastLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if l := lines[len(lines)-1]; l != "" {
		return l
	}
	return "it said nothing"
}

// Close stops the agents (SIGTERM, then kill after 5 s).
func (la *LocalAgents) Close() {
	for _, p := range la.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range la.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	la.procs = nil
}

// FreePorts returns the first of n consecutive free TCP ports on loopback.
func FreePorts(n int) (int, error) {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for i := 1; i < n && ok; i++ {
			l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
			} else {
				l2.Close()
			}
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports on loopback", n)
}
