package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/sweep"
)

// The third round of hostile probes: secrets that could leak into what a
// run writes, names that could drive a terminal, and links that could
// multiply an analysis's memory.

// scanForSecrets fails the test for every file under dir that holds one of
// secrets; it returns how many files it read.
func scanForSecrets(t *testing.T, dir string, secrets ...string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHostileSecretsStayOutOfTheRun: a sweep given its token on the
// command line (--token) through a NATS server that requires a password
// (given by CP_BROKER_USER and CP_BROKER_PASSWORD_FILE) runs, and then
// every file of its run directory, the analyses' and the report included,
// is free of both.
func TestHostileSecretsStayOutOfTheRun(t *testing.T) {
	const user, password, token = "cp-bench", "pw-3c1e5a7f9b2d", "tok-8a1f2e3d4c5b6a79"
	addr, _ := realserver.NATS(t, "--user", user, "--pass", password)
	pwFile := filepath.Join(t.TempDir(), "broker-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	handlers := filepath.Join(t.TempDir(), "handlers.yaml")
	if err := os.WriteFile(handlers, []byte("default: {handler: buffered, path: \"{name}.log\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "cpsweep"), append([]string{"--results", results, "--token", token, "--sut", "jetstream://" + addr + "/cp.secret",
		"--search", "linear", "--from", "10k", "--to", "10k", "--step", "1k", "--duration", "1s", "--warmup", "200ms", "--lateness-floor", "100ms",
		"--profile", handlers, "--profile-rate", "10k", "--clock", "--name", "secrets"}, hostTolerant...)...)
	cmd.Env = append(os.Environ(), driver.EnvUser+"="+user, driver.EnvPasswordFile+"="+pwFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("a sweep through a NATS with a password: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte(password)) || bytes.Contains(out, []byte(token)) {
		t.Errorf("the sweep printed a secret:\n%s", out)
	}
	runs, _ := filepath.Glob(filepath.Join(results, "*-secrets"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v", runs)
	}
	for _, args := range [][]string{{"analyze", "--pag", runs[0]}, {"diagnose", runs[0]}, {"report", runs[0]}} {
		if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), args...).CombinedOutput(); err != nil {
			t.Fatalf("cpsweep %s: %v\n%s", args[0], err, out)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(runs[0], "config.json"))
	if !bytes.Contains(cfg, []byte(`"--token",`)) || !bytes.Contains(cfg, []byte(`"REDACTED"`)) {
		t.Errorf("config.json does not record the token flag as redacted:\n%s", cfg)
	}
	if n := scanForSecrets(t, runs[0], token, password); n < 10 {
		t.Errorf("only %d files in the run directory", n)
	}
}

// TestHostileCredentialsInURLsAreRefused: every place a URL is accepted
// refuses one with credentials before anything starts (usage exit status),
// writes nothing, and never repeats the password.
func TestHostileCredentialsInURLsAreRefused(t *testing.T) {
	const password = "pw-51d2c3b4a5f6"
	results := t.TempDir()
	for _, tc := range []struct {
		bin  string
		args []string
		code int
	}{
		{"cpsweep", []string{"--results", results, "--sut", "nats://u:" + password + "@127.0.0.1:4222/s"}, sweep.ExitInvalidPlan},
		{"cpsweep", []string{"--results", results, "--relay-input", "nats://u:" + password + "@127.0.0.1:4222/s"}, sweep.ExitInvalidPlan},
		{"cpsweep", []string{"--results", results, "--profile", "http://u:" + password + "@127.0.0.1:1/cfg"}, sweep.ExitInvalidPlan},
		{"cpsweep", []string{"demo", "nats", "--", "--results", results, "--relay-input=kafka://:" + password + "@127.0.0.1:9092/t"}, sweep.ExitInvalidPlan},
		{"dgrecv", []string{"--agent", "--connect", "redis://u:" + password + "@127.0.0.1:6379/k"}, sweep.ExitInvalidPlan},
		{"dgsend", []string{"--connect", "jetstream://u:" + password + "@127.0.0.1:4222/s", "--count", "1"}, sweep.ExitInvalidPlan},
		{"dgsend", []string{"--connect", "tcp://127.0.0.1:1", "--profile", "http://127.0.0.1:1/cfg?token=" + password, "--count", "1"}, sweep.ExitInvalidPlan},
	} {
		cmd := exec.Command(filepath.Join(binDir, tc.bin), tc.args...)
		cmd.Dir = t.TempDir()
		done := make(chan struct{})
		var out []byte
		var err error
		go func() { out, err = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%s %v: still running after 30 s: it started", tc.bin, tc.args)
		}
		if code := ExitCode(err); code != tc.code || !strings.Contains(string(out), "credentials in a URL are refused") {
			t.Errorf("%s %v: exit %d, want %d and the refusal:\n%s", tc.bin, tc.args, code, tc.code, out)
		}
		if strings.Contains(string(out), password) {
			t.Errorf("%s %v: the refusal repeats the password:\n%s", tc.bin, tc.args, out)
		}
		if lines := strings.Count(string(out), "\n"); lines > 3 {
			t.Errorf("%s %v: %d lines for one refusal:\n%s", tc.bin, tc.args, lines, out)
		}
		if n := scanForSecrets(t, cmd.Dir, password); n != 0 {
			t.Errorf("%s %v: wrote %d files", tc.bin, tc.args, n)
		}
	}
	if runs, _ := filepath.Glob(filepath.Join(results, "*")); len(runs) != 0 {
		t.Errorf("refused sweeps left run directories: %v", runs)
	}
}

// TestHostileNamesCannotDriveTheTerminal: node directories and log files
// whose names hold ESC, OSC, BEL, CR or a newline reach no command's
// output raw: every command shows them as escapes, and no line is forged.
func TestHostileNamesCannotDriveTheTerminal(t *testing.T) {
	names := []string{"osc\x1b]0;pwned\x07", "cr\rrewritten", "nl\nforged: the answer is 42"}
	dir := hostileRunDir(t, func(profiles string) {
		for i, name := range names {
			node := filepath.Join(filepath.Dir(profiles), name)
			if err := os.MkdirAll(node, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(profiles, fmt.Sprintf("emit.%d%s.log", i, name)), runBlock(1, 1, 1), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(node, "emit.0.log"), runBlock(1, 1, 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	logPath := filepath.Join(dir, "profiles", "a", "emit.0"+names[0]+".log")
	for _, args := range [][]string{
		{"analyze", dir},
		{"analyze", "--pag", dir},
		{"report", dir},
		{"invariants", "--progress-max", "100ms", dir},
		{"diagnose", dir},
		{"logs", "stats", logPath},
		{"logs", "stats", filepath.Join(dir, "profiles", names[2], "missing.log")},
	} {
		code, out, _ := boundedRun(t, 30*time.Second, args...)
		for _, raw := range []string{"\x1b", "\x07", "\r"} {
			if strings.Contains(out, raw) {
				t.Errorf("%s: the output holds %q raw (exit %d):\n%q", args[0], raw, code, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "forged") {
				t.Errorf("%s: a name forged the line %q", strings.Join(args[:len(args)-1], " "), line)
			}
		}
	}
}

// TestHostileLinksCannotMultiplyMemory: 1000 hard links of one log are
// read once; more distinct logs than a run directory may hold, or a
// directory of 100,000 empty logs, are refused at once; a link to
// /dev/ptmx is refused; each command ends within its time and memory.
func TestHostileLinksCannotMultiplyMemory(t *testing.T) {
	block := runBlock(1000, 1, 1000)
	for _, tc := range []struct {
		name string
		put  func(profiles string)
		want string
	}{
		{"1000 hard links", func(profiles string) {
			first := filepath.Join(profiles, "activity.thread0.log")
			if err := os.WriteFile(first, block, 0o644); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 1000; i++ {
				if err := os.Link(first, filepath.Join(profiles, fmt.Sprintf("activity.thread%d.log", i))); err != nil {
					t.Fatal(err)
				}
			}
		}, "(a link): read once"},
		{"200 distinct logs", func(profiles string) {
			for i := 0; i < 200; i++ {
				if err := os.WriteFile(filepath.Join(profiles, fmt.Sprintf("activity.thread%d.log", i)), block, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, "above what a run directory may hold"},
		{"100,000 empty logs", func(profiles string) {
			for i := 0; i < 100000; i++ {
				f, err := os.Create(filepath.Join(profiles, fmt.Sprintf("emit.%d.log", i)))
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
		}, "entries, above what a run directory may hold"},
		{"a link to /dev/ptmx", func(profiles string) {
			if err := os.Symlink("/dev/ptmx", filepath.Join(profiles, "emit.0.log")); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link: not read"}, // a run directory's files are its own
	} {
		dir := hostileRunDir(t, tc.put)
		for _, args := range [][]string{{"analyze", dir}, {"analyze", "--pag", dir}, {"report", dir}, {"invariants", "--progress-max", "1s", dir}} {
			start := time.Now()
			code, out, rss := boundedRun(t, 60*time.Second, args...)
			el := time.Since(start)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("%s: %s: exit %d, want 1 and %q:\n%.2000s", tc.name, strings.Join(args[:len(args)-1], " "), code, tc.want, out)
			}
			if rss > 500 || el > 20*time.Second {
				t.Errorf("%s: %s: peak %.0f MiB in %v, want under 500 MiB and 20 s", tc.name, strings.Join(args[:len(args)-1], " "), rss, el)
			}
			t.Logf("%s: %s: exit %d, peak %.0f MiB, %v", tc.name, strings.Join(args[:len(args)-1], " "), code, rss, el.Round(time.Millisecond))
		}
	}
}

// leafPaths lists the paths of every string in a decoded JSON value.
func leafPaths(v any, at []any, out *[][]any) {
	switch x := v.(type) {
	case string:
		*out = append(*out, append([]any(nil), at...))
	case map[string]any:
		for k, c := range x {
			leafPaths(c, append(at, k), out)
		}
	case []any:
		for i, c := range x {
			leafPaths(c, append(at, i), out)
		}
	}
}

// setLeaf returns a deep copy of v with the string at path replaced.
func setLeaf(v any, path []any, s string) any {
	if len(path) == 0 {
		return s
	}
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = e
		}
		c[path[0].(string)] = setLeaf(x[path[0].(string)], path[1:], s)
		return c
	case []any:
		c := append([]any(nil), x...)
		c[path[0].(int)] = setLeaf(x[path[0].(int)], path[1:], s)
		return c
	}
	return v
}
