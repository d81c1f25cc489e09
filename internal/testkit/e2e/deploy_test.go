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
	// the Secret's default folder is under the user's home: a test's own
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME=")
	out, err := cmd.CombinedOutput()
	return string(out), ExitCode(err)
}

// TestDeployKubernetesWritesManifests: the command writes the files, says
// what to type next, and never prints the token it generated.
func TestDeployKubernetesWritesManifests(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k8s")
	secretDir := filepath.Join(t.TempDir(), "secret")
	out, code := deployRun(t, "--out", dir, "--secret-out", secretDir, "--sender-count", "2", "--lanes", "2", "--sut-selector", "app=nats",
		"--profile", filepath.Join(moduleDir(t), "profiles", "default.yaml"), "--", "--duration", "3s", "--bucket", "100", "--clock")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "01-token-secret.yaml")); err == nil {
		t.Errorf("the Secret was written among the manifests in %s", dir)
	}
	secret, err := os.ReadFile(filepath.Join(secretDir, "01-token-secret.yaml"))
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
	for _, want := range []string{"00-namespace.yaml", "02-handlers.yaml", "20-sweep.yaml", "kubectl apply -f " + dir + "/00-namespace.yaml -f " + secretDir + "/01-token-secret.yaml -f " + dir, "kubectl -n cp cp "} {
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
	if out, code := deployRun(t, "--out", dir, "--secret-out", secretDir); code != sweep.ExitError || !strings.Contains(out, "--force") {
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
	topoCreds := filepath.Join(t.TempDir(), "creds.yaml")
	if err := os.WriteFile(topoCreds, []byte("sweep_args: [--sut, 'redis://cp:pw@10.0.0.1:6379/k']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topoTwo := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(topoTwo, []byte("name: a\n---\nname: b\nbogus: 1\n"), 0o644); err != nil {
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
		{[]string{"--", "--sut", "nats://u:pw@10.0.0.1:4222/s"}, "credentials in a URL are refused"},
		{[]string{"--", "--relay-input=jetstream://:pw@10.0.0.1:4222/s"}, "credentials in a URL are refused"},
		{[]string{"--topology", topoCreds}, "credentials in a URL are refused"},
		{[]string{"--topology", topoTwo}, "a second YAML document"},
	} {
		dir := filepath.Join(t.TempDir(), "k8s")
		out, code := deployRun(t, append([]string{"--out", dir}, tc.args...)...)
		if code != sweep.ExitInvalidPlan || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, sweep.ExitInvalidPlan, tc.want, out)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%v: wrote %s anyway", tc.args, dir)
		}
		if strings.Contains(out, "pw@") {
			t.Errorf("%v: the refusal repeats the password:\n%s", tc.args, out)
		}
	}
}

// TestDeployKeepsTheTokenOutOfTheWorkingTree: by default the Secret goes
// to a private folder under the user's configuration directory, one for
// each --out, and no file under the working directory holds the token. A
// second deploy into another --out works; into the same one, it says
// --force.
func TestDeployKeepsTheTokenOutOfTheWorkingTree(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	deployIn := func(extra ...string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(binDir, "cpsweep"), append([]string{"deploy", "kubernetes"}, extra...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=")
		return cmd.CombinedOutput()
	}
	out, err := deployIn()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if out, err := deployIn("--out", "k8s-second"); err != nil {
		t.Fatalf("a second deploy into another --out: %v:\n%s", err, out)
	}
	if out, err := deployIn(); err == nil || !strings.Contains(string(out), "--force") {
		t.Fatalf("a second deploy into the same --out: %v:\n%s", err, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(home, ".config", "cp", "deploy", "cp-cp-*"))
	if len(dirs) != 2 {
		t.Fatalf("Secret folders %v, want one for each --out", dirs)
	}
	secretDir := dirs[0]
	secret, err := os.ReadFile(filepath.Join(secretDir, "01-token-secret.yaml"))
	if err != nil {
		t.Fatalf("the Secret is not in %s: %v\n%s", secretDir, err, out)
	}
	if st, err := os.Stat(secretDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the Secret's folder: %v %v, want 0700", st.Mode(), err)
	}
	m := regexp.MustCompile(`token: (\S+)`).FindSubmatch(secret)
	if m == nil {
		t.Fatalf("no token in the Secret:\n%s", secret)
	}
	token, _ := base64.StdEncoding.DecodeString(string(m[1]))
	n := 0
	filepath.WalkDir(work, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), string(m[1])) || strings.Contains(string(b), strings.TrimSpace(string(token))) {
			t.Errorf("%s holds the token", path)
		}
		return nil
	})
	if n < 4 {
		t.Errorf("only %d manifests under the working directory", n)
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
