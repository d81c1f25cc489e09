package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// podman runs a podman command and returns its combined output.
func podman(args ...string) (string, error) {
	out, err := exec.Command("podman", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// podmanLimits are the resource limits a container gets: podman's
// defaults are above this sandbox's hard limits, and runc may not raise
// them ("error setting rlimit ... operation not permitted").
func podmanLimits() []string {
	var nofile syscall.Rlimit
	n := uint64(4096)
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) == nil {
		n = min(nofile.Max, 20000)
	}
	return []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", n, n), "--ulimit", "nproc=4096:4096"}
}

// manifests are the objects of cpsweep deploy kubernetes that the
// container test runs.
type manifests struct {
	senders, receivers appsv1.StatefulSet
	sweep              batchv1.Job
	services           map[string]corev1.Service
}

func readManifests(t *testing.T, dir string) manifests {
	t.Helper()
	m := manifests{services: map[string]corev1.Service{}}
	for file, objs := range map[string][]any{
		"10-senders.yaml":   {new(corev1.Service), &m.senders},
		"11-receivers.yaml": {new(corev1.Service), &m.receivers},
		"20-sweep.yaml":     {new(corev1.PersistentVolumeClaim), &m.sweep},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(string(b), "\n---\n")
		if len(docs) != len(objs) {
			t.Fatalf("%s: %d objects, want %d", file, len(docs), len(objs))
		}
		for i, doc := range docs {
			if err := yaml.UnmarshalStrict([]byte(doc), objs[i]); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if svc, ok := objs[i].(*corev1.Service); ok {
				m.services[svc.Name] = *svc
			}
		}
	}
	return m
}

// TestContainersSweptWithDiscovery runs what cpsweep deploy kubernetes
// wrote, as containers: the image built from this checkout's binaries
// (scripts/image-from-host.sh: no base image can be pulled here), each
// StatefulSet's replicas with its command, arguments, user and read-only
// root, behind the DNS name its headless Service has in the cluster
// (cp-sender.cp.svc.cluster.local, a network alias on a private podman
// network), the token mounted where the Secret is, and then the Job's
// container, hold script and all, which finds the agents by DNS and sweeps.
func TestContainersSweptWithDiscovery(t *testing.T) {
	w := startWalk(t, "")
	w.deploy(t, "--sender-count", "2", "--", "--json", "--search", "linear", "--from", "20k", "--to", "40k", "--step", "20k", "--duration", "1s", "--warmup", "200ms",
		"--lateness-floor", "100ms")
	stdout, stderr := w.run(t)
	checkContainerSweep(t, stdout, stderr, w.runs, 3)
}

// TestContainersSweepYSB is the same walk with YSB as the system under
// test, each part a container of its own behind a DNS name as a Service
// would give it: JetStream (nats-server), Redis, and cpjob between two
// topics; the manifests are cpsweep deploy kubernetes --job-input and
// --job-output, and every trial owes each campaign's window exactly.
func TestContainersSweepYSB(t *testing.T) {
	var extra []string
	for _, prog := range []string{"nats-server", "redis-server"} {
		path, err := exec.LookPath(prog)
		if err != nil {
			skipOrFail(t, prog+" is not installed: the YSB container test runs it in a container")
		}
		extra = append(extra, path)
	}
	w := startWalk(t, strings.Join(extra, " "))
	nats, redis := "nats.cp.svc.cluster.local", "redis.cp.svc.cluster.local"
	in, out := "jetstream://"+nats+":4222/ysb.in", "jetstream://"+nats+":4222/ysb.out"
	w.side(t, nats, "nats-server", "-js", "-a", "0.0.0.0", "-p", "4222", "-sd", "/tmp/js")
	w.side(t, redis, "redis-server", "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no")
	job := w.side(t, "ysb.cp.svc.cluster.local", "cpjob", "ysb", "--input", in+"?group=ysb", "--output", out, "--redis", redis+":6379", "--window", "1s", "--lateness", "500ms")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if logs, _ := podman("logs", job); strings.Contains(logs, "cpjob ysb: reading") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("cpjob did not start:\n%s", logs)
		}
	}
	w.deploy(t, "--sender-count", "1", "--job-input", in+"?group=ysb", "--job-output", out, "--", "--json",
		"--scenario", "ad-event", "--schema", "window", "--expect-filter", "event_type == view", "--expect-window", "1s", "--bucket", "100",
		"--search", "linear", "--from", "2k", "--to", "4k", "--step", "2k", "--duration", "2s", "--warmup", "500ms", "--job-quiet", "2500ms",
		"--lateness-floor", "100ms")
	stdout, stderr := w.run(t)
	checkContainerSweep(t, stdout, stderr, w.runs, 2)
	if !strings.Contains(stdout, "per key and window: all") {
		t.Errorf("the trials did not compare each campaign's window:\n%s", stdout)
	}
}

// walk is one container walk: its image, private network, token and the
// run directory the sweep's claim maps to.
type walk struct {
	id, image, token, runs, k8s string
	m                           manifests
}

// startWalk builds the image (with extra host programs: a broker, Redis)
// and makes the network; everything is removed when the test ends.
func startWalk(t *testing.T, extraBins string) *walk {
	if _, err := exec.LookPath("podman"); err != nil {
		skipOrFail(t, "podman is not installed (apt-get install podman): the container test needs it")
	}
	if out, err := podman("info", "--format", "{{.Host.OCIRuntime.Name}}"); err != nil {
		skipOrFail(t, fmt.Sprintf("podman cannot run here: %v %s", err, out))
	}
	id := fmt.Sprintf("cp-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	w := &walk{id: id, image: "localhost/" + id + ":test"}
	build := exec.Command(filepath.Join(moduleDir(t), "scripts", "image-from-host.sh"), w.image)
	build.Env = append(os.Environ(), "BIN="+binDir, "EXTRA_BINS="+extraBins)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the image: %v\n%s", err, out)
	}
	t.Cleanup(func() { podman("rmi", "-f", w.image) })
	dir := t.TempDir()
	w.token, w.runs, w.k8s = filepath.Join(dir, "token"), filepath.Join(dir, "runs"), filepath.Join(dir, "k8s")
	if err := os.WriteFile(w.token, []byte("e2e-container-token-0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.runs, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w.runs, 0o777); err != nil { // the containers run as the manifests' user
		t.Fatal(err)
	}
	if out, err := podman("network", "create", id); err != nil {
		t.Fatalf("podman network create: %v %s", err, out)
	}
	t.Cleanup(func() { podman("network", "rm", "-f", id) })
	return w
}

// side starts a container of the system under test behind alias, running
// args; it returns the container's name.
func (w *walk) side(t *testing.T, alias string, args ...string) string {
	t.Helper()
	name := w.id + "-" + strings.Split(alias, ".")[0]
	run := append([]string{"run", "-d", "--name", name, "--network", w.id, "--network-alias", alias, "--user", "65532:65532"}, podmanLimits()...)
	if out, err := podman(append(append(run, "--entrypoint", args[0], w.image), args[1:]...)...); err != nil {
		t.Fatalf("start %s: %v %s", name, err, out)
	}
	w.cleanup(t, name)
	return name
}

func (w *walk) cleanup(t *testing.T, name string) {
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := podman("logs", name)
			t.Logf("%s:\n%s", name, logs)
		}
		podman("rm", "-f", "-t", "1", name)
	})
}

// deploy writes the manifests (args: cpsweep deploy kubernetes's, then --
// and the sweep's) and starts every agent's replica as a container.
func (w *walk) deploy(t *testing.T, args ...string) {
	t.Helper()
	at := slices.Index(args, "--")
	all := append(append([]string{"--out", w.k8s, "--image", w.image, "--token-file", w.token, "--hold", "1s"}, args[:at+1]...), args[at+1:]...)
	all = append(all, "--discover-timeout", "30s")
	all = append(all, hostTolerant...)
	if out, code := deployRun(t, all...); code != 0 {
		t.Fatalf("deploy: exit %d\n%s", code, out)
	}
	w.m = readManifests(t, w.k8s)
	for _, s := range []appsv1.StatefulSet{w.m.senders, w.m.receivers} {
		svc := w.m.services[s.Spec.ServiceName]
		alias := fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, svc.Namespace)
		for i := 0; i < int(*s.Spec.Replicas); i++ {
			name := fmt.Sprintf("%s-%s-%d", w.id, s.Name, i)
			args := append([]string{"run", "-d", "--name", name, "--network-alias", alias}, podArgs(t, w.id, w.token, s.Spec.Template.Spec)...)
			ctr := s.Spec.Template.Spec.Containers[0]
			if out, err := podman(append(append(append(args, "--entrypoint", ctr.Command[0], w.image), ctr.Command[1:]...), ctr.Args...)...); err != nil {
				t.Fatalf("start %s: %v %s", name, err, out)
			}
			w.cleanup(t, name)
		}
	}
}

// run runs the sweep's Job as a container and returns its output.
func (w *walk) run(t *testing.T) (string, string) {
	return runJob(t, w.id, w.image, w.token, w.runs, w.m.sweep.Spec.Template.Spec)
}

// podArgs are the podman flags that give a container what its pod spec
// gives it: the user, a read-only root with a writable /tmp, the token
// where the Secret is mounted, the network.
func podArgs(t *testing.T, network, token string, spec corev1.PodSpec) []string {
	t.Helper()
	sc, ctr := spec.SecurityContext, spec.Containers[0]
	args := append([]string{"--network", network, "--user", fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup)}, podmanLimits()...)
	if ctr.SecurityContext != nil && ctr.SecurityContext.ReadOnlyRootFilesystem != nil && *ctr.SecurityContext.ReadOnlyRootFilesystem {
		args = append(args, "--read-only", "--tmpfs", "/tmp")
	}
	for _, mnt := range ctr.VolumeMounts {
		if mnt.Name == "token" {
			args = append(args, "-v", token+":"+mnt.MountPath+"/token:ro")
		}
	}
	for _, e := range ctr.Env {
		args = append(args, "-e", e.Name+"="+e.Value)
	}
	return args
}

// runJob runs the Job's container with the runs directory as its claim.
func runJob(t *testing.T, network, image, token, runs string, spec corev1.PodSpec) (string, string) {
	t.Helper()
	ctr := spec.Containers[0]
	args := append([]string{"run", "--rm", "--name", network + "-sweep"}, podArgs(t, network, token, spec)...)
	for _, mnt := range ctr.VolumeMounts {
		if mnt.Name == "runs" {
			args = append(args, "-v", runs+":"+mnt.MountPath)
		}
	}
	args = append(append(append(args, "--entrypoint", ctr.Command[0], image), ctr.Command[1:]...), ctr.Args...)
	cmd := exec.Command("podman", args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	go func() { done <- cmd.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the Job's container: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the Job's container did not finish:\n%s", stderr.String())
	}
	return stdout.String(), stderr.String()
}

// checkContainerSweep checks the Job's output: two trials passed, agents
// (2 senders and a receiver, or 1 and 1) on one machine, the run directory
// on the claim.
func checkContainerSweep(t *testing.T, stdout, stderr, runs string, agents int) {
	t.Helper()
	// the hold script's own line follows cpsweep's JSON on stdout
	js, rest, _ := strings.Cut(stdout, "\ncpsweep exited ")
	var rep struct {
		sweepReport
		Agents []struct{ Role, Host, Machine string } `json:"agents"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("summary: %v\n%s\n%s", err, stdout, stderr)
	}
	if !strings.HasPrefix(rest, "0;") {
		t.Errorf("the hold script did not report cpsweep's exit status 0: %q", rest)
	}
	if len(rep.Result.Trials) != 2 || !rep.Result.Trials[0].Verdict.Pass || !rep.Result.Trials[1].Verdict.Pass {
		t.Fatalf("trials %+v\n%s", rep.Result.Trials, stderr)
	}
	if len(rep.Agents) != agents {
		t.Fatalf("agents %+v, want %d", rep.Agents, agents)
	}
	for _, a := range rep.Agents {
		if a.Machine == "" || a.Machine != rep.Agents[0].Machine {
			t.Errorf("agents %+v: containers on one machine should report one boot id", rep.Agents)
			break
		}
	}
	if kept, _ := filepath.Glob(filepath.Join(runs, "*", "summary.json")); len(kept) != 1 {
		t.Errorf("the run directory is not on the claim's volume: %v", kept)
	}
	if b, err := os.ReadFile(filepath.Join(runs, "last-exit-status")); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("last-exit-status: %q %v", b, err)
	}
}
