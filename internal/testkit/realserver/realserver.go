package realserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/cloudprofiler-go/cp/driver/embedded"
)

// NATS starts nats-server with JetStream, its store in a temporary folder,
// and returns its host:port and a stop that kills it (the test's end
// does too). extra are more of the server's flags (e.g. --user U --pass P).
func NATS(t testing.TB, extra ...string) (addr string, stop func()) {
	t.Helper()
	return start(t, "nats-server", func(port int, dir string) []string {
		return append([]string{"-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", dir}, extra...)
	})
}

// NATSHeld is NATS with the server held to cores of CPU by a cgroup's
// quota (the cgroup v1 cpu controller at /sys/fs/cgroup/cpu), removed at
// stop: a broker that is the limit. The quota is given every 10 ms
// (heldPeriodUs), not the kernel's default 100 ms: held to 10%, the
// server ran 10 ms and then stopped for 90, and its capacity moved four
// times over between sweeps (6 k to 24 k/s, BENCHMARKS.md). The test is
// skipped where the controller cannot be written (not root, no cgroup v1).
func NATSHeld(t testing.TB, cores float64) (addr string, stop func()) {
	t.Helper()
	const root = "/sys/fs/cgroup/cpu"
	dir, err := os.MkdirTemp(root, "cp-nats-")
	if err != nil {
		t.Skipf("a CPU quota needs the cgroup v1 cpu controller at %s: %v", root, err)
	}
	var pid int
	addr, stopServer := startWith(t, "nats-server", func(port int, d string) []string {
		return []string{"-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", d}
	}, func(p int) { pid = p })
	remove := func() { stopServer(); _ = os.Remove(dir) }
	t.Cleanup(remove)
	for file, v := range map[string]string{"cpu.cfs_period_us": fmt.Sprint(heldPeriodUs), "cpu.cfs_quota_us": fmt.Sprint(max(1000, int(cores*heldPeriodUs)))} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			t.Fatalf("cgroup %s: %v", file, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0o644); err != nil {
		t.Fatalf("move nats-server into its cgroup: %v", err)
	}
	return addr, remove
}

// heldPeriodUs is NATSHeld's CFS period in microseconds; the kernel
// takes quotas from 1 ms up.
const heldPeriodUs = 10_000

// EmbeddedNATS starts an in-process NATS server with JetStream (package
// embedded, as cpsweep demo nats runs it: nothing to install) and returns
// its host:port; the test's end stops it.
func EmbeddedNATS(t testing.TB) string {
	t.Helper()
	s, err := embedded.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Addr()
}

// Redis starts redis-server without persistence; extra are more of its
// flags (e.g. --user U on >P ~* &* +@all).
func Redis(t testing.TB, extra ...string) (addr string, stop func()) {
	t.Helper()
	return start(t, "redis-server", func(port int, dir string) []string {
		return append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	})
}

func start(t testing.TB, name string, args func(port int, dir string) []string) (string, func()) {
	t.Helper()
	return startWith(t, name, args, nil)
}

// startWith is start, telling started the server's process id.
func startWith(t testing.TB, name string, args func(port int, dir string) []string, started func(pid int)) (string, func()) {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		why := fmt.Sprintf("%s is not installed (apt-get install %s; make test installs it)", name, name)
		if os.Getenv("CP_REQUIRE_ALL") != "" {
			t.Fatalf("CP_REQUIRE_ALL is set but %s", why)
		}
		t.Skip(why)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var out strings.Builder
	cmd := exec.Command(bin, args(port, t.TempDir())...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	}
	t.Cleanup(stop)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s:\n%s", name, addr, out.String())
		}
	}
}

// FakeKafka starts franz-go's in-process Kafka-protocol cluster, one
// broker, and returns its address; the test's end stops it. One goroutine
// serves it: it checks a client's behaviour, and measures nothing.
func FakeKafka(t testing.TB) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// DeleteJetStream deletes the JetStream stream that captures subject on
// the server at addr (HOST:PORT, or a nats:// URL), as someone else might
// under a running job.
func DeleteJetStream(addr, subject string) error {
	if !strings.HasPrefix(addr, "nats://") {
		addr = "nats://" + addr
	}
	nc, err := natsgo.Connect(addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name, err := js.StreamNameBySubject(ctx, subject)
	if err != nil {
		return fmt.Errorf("which stream holds %s: %w", subject, err)
	}
	return js.DeleteStream(ctx, name)
}
