package e2e

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/sweep"
)

// deployRun runs cpsweep deploy kubernetes and returns its output and
// exit status.
func deployRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cpsweep"), append([]string{"deploy", "kubernetes"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), ExitCode(err)
}

// TestDeployKubernetesWritesManifests: the command writes the files, says
// what to type next, and never prints the token it generated.
func TestDeployKubernetesWritesManifests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k8s")
	out, code := deployRun(t, "--out", dir, "--sender-count", "2", "--lanes", "2", "--sut-selector", "app=nats",
		"--profile", filepath.Join(moduleDir(t), "profiles", "default.yaml"), "--", "--duration", "3s", "--bucket", "100", "--clock")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	secret, err := os.ReadFile(filepath.Join(dir, "01-token-secret.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`token: (\S+)`).FindSubmatch(secret)
	if m == nil {
		t.Fatalf("no token in the Secret:\n%s", secret)
	}
	token, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil || len(strings.TrimSpace(string(token))) < 16 {
		t.Fatalf("the Secret's token %q: %v", token, err)
	}
	if strings.Contains(out, strings.TrimSpace(string(token))) || strings.Contains(out, string(m[1])) {
		t.Errorf("the command printed the token:\n%s", out)
	}
	for _, want := range []string{"00-namespace.yaml", "02-handlers.yaml", "20-sweep.yaml", "kubectl apply -f " + dir, "kubectl -n cp cp "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	job, _ := os.ReadFile(filepath.Join(dir, "20-sweep.yaml"))
	for _, want := range []string{"dns:cp-sender.cp.svc.cluster.local:9101", "- \"2\"", "- --clock"} {
		if !strings.Contains(string(job), want) {
			t.Errorf("the Job lacks %q", want)
		}
	}
	// a second deploy into the same folder keeps the first one's token
	if out, code := deployRun(t, "--out", dir); code != sweep.ExitError || !strings.Contains(out, "--force") {
		t.Errorf("second deploy: exit %d:\n%s", code, out)
	}
}

// TestDeployKubernetesRefusesBadInput: every mistake is an invalid plan
// (exit 4) before a file is written.
func TestDeployKubernetesRefusesBadInput(t *testing.T) {
	topo := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(topo, []byte("senders: {count: 2, cpu: 4}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "--duraton", "3s"}, "unknown flag: --duraton"},
		{[]string{"--", "--token", "abcdefghijklmnopqrstuvwxyz"}, "--token are set by the manifests"},
		{[]string{"--", "--sender", "h1:9101"}, "--sender are set by the manifests"},
		{[]string{"--", "stray"}, "is not a flag"},
		{[]string{"--sender-cpus", "0"}, "whole number of CPUs"},
		{[]string{"--receiver-memory", "lots"}, "memory"},
		{[]string{"--sut-selector", "app"}, "want key=value"},
		{[]string{"--topology", topo}, "field cpu not found"},
		{[]string{"--topology", topo, "--sender-count", "3"}, "not both"},
	} {
		dir := filepath.Join(t.TempDir(), "k8s")
		out, code := deployRun(t, append([]string{"--out", dir}, tc.args...)...)
		if code != sweep.ExitInvalidPlan || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, sweep.ExitInvalidPlan, tc.want, out)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%v: wrote %s anyway", tc.args, dir)
		}
	}
}

func moduleDir(t *testing.T) string {
	t.Helper()
	d, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
