package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep/watch"
)

// TestWatchDuringASweep watches the agents of a running sweep: in a real
// terminal (tmux, captured), as JSON lines, and as the web page in
// headless Chromium, each showing the consumer with its rate and label
// and the live critical participation. The sweep is paced well below the
// pipeline's capacity, so the sender's schedule carries the critical
// path: the sender thread's pacing leads every whole window.
func TestWatchDuringASweep(t *testing.T) {
	sw, err := Start(filepath.Join(binDir, "cpsweep"), hostTolerant[0], hostTolerant[1], hostTolerant[2], hostTolerant[3], "--search", "linear", "--from", "20k", "--to", "20k", "--step", "1k",
		"--duration", "15s", "--warmup", "300ms", "--work", "10us", "--bucket", "10", "--lateness-floor", "500ms", "--results", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sw.Cmd.Process.Kill(); _ = sw.Wait(10 * time.Second) })
	if !sw.WaitForLine("results in", 30*time.Second) {
		t.Fatalf("the sweep did not start:\n%s", sw.Stderr.String())
	}
	m := regexp.MustCompile(`senders (\S+) -> receivers (\S+)`).FindStringSubmatch(sw.Stderr.String())
	if m == nil {
		t.Fatalf("no agent addresses in:\n%s", sw.Stderr.String())
	}
	argv := []string{filepath.Join(binDir, "cpsweep"), "watch", "--sender", m[1], "--receiver", m[2], "--interval", "500ms"}
	time.Sleep(2 * time.Second) // into the trial

	t.Run("json", func(t *testing.T) {
		out, err := exec.Command(argv[0], append(argv[1:], "--json", "--for", "2600ms")...).Output()
		if err != nil {
			t.Fatalf("watch --json: %v\n%s", err, out)
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		sc.Buffer(nil, 1<<20)
		lines, withRate, windows, paced := 0, 0, 0, 0
		for sc.Scan() {
			lines++
			if regexp.MustCompile(`"stage":"consumer","kind":"consumer","items_per_s":[1-9]`).MatchString(sc.Text()) {
				withRate++
			}
			var v watch.View
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("view %d: %v", lines, err)
			}
			for _, w := range v.CPWindows {
				windows++
				// The sender's thread carries the window: pacing, or
				// runnable while pacing (cpu-wait, on a loaded host).
				thread, lead := 0.0, ""
				for _, s := range w.Top {
					if s.Worker == "sender0/thread0" && (s.Kind == "pacing" || s.Kind == "cpu-wait") {
						thread += s.Value
					}
					if s.Kind != "cpu-wait" && lead == "" {
						lead = s.Worker + " " + s.Kind
					}
				}
				if w.HasPath && lead == "sender0/thread0 pacing" && thread > 0.5 {
					paced++
				}
			}
		}
		if lines < 3 || withRate == 0 {
			t.Fatalf("%d views, %d with the consumer consuming:\n%s", lines, withRate, out)
		}
		if windows == 0 || paced < windows*3/4 {
			t.Fatalf("%d live windows, %d led by the sender's pacing:\n%s", windows, paced, out)
		}
		last := out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:]
		checkFieldsDocumented(t, "cpsweep watch --json", last, 20)
	})

	t.Run("terminal", func(t *testing.T) {
		if _, err := exec.LookPath("tmux"); err != nil {
			skipOrFail(t, "no tmux here (apt-get install tmux; .ci/run installs it): the terminal check is skipped")
		}
		session := fmt.Sprintf("cpwatch%d", time.Now().UnixNano())
		cmdline := strings.Join(append(argv, "--for", "3s"), " ") + "; sleep 5"
		if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "140", "-y", "30", cmdline).CombinedOutput(); err != nil {
			t.Fatalf("tmux: %v %s", err, out)
		}
		defer exec.Command("tmux", "kill-session", "-t", session).Run()
		time.Sleep(2500 * time.Millisecond)
		out, err := exec.Command("tmux", "capture-pane", "-p", "-t", session).Output()
		if err != nil {
			t.Fatal(err)
		}
		screen := string(out)
		// Redrawn in place: one header on the screen, the consumer consuming.
		if strings.Count(screen, "cpsweep watch") != 1 || !regexp.MustCompile(`receiver0 +consumer +consumer +[1-9][0-9.]* k/s +\d+% +\d+% +(HEALTHY|DONTCARE)`).MatchString(screen) ||
			!regexp.MustCompile(`(?m)^  \d\d:\d\d:\d\d\.\d{3}  sender0/thread0 (pacing|cpu-wait) \d+%`).MatchString(screen) {
			t.Fatalf("the terminal shows:\n%s", screen)
		}
	})

	t.Run("chromium", func(t *testing.T) {
		port := mustPort(t)
		w, err := Start(argv[0], append(argv[1:], "--http", fmt.Sprintf("127.0.0.1:%d", port), "--for", "20s")...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Cmd.Process.Kill(); _ = w.Wait(5 * time.Second) }()
		if !w.WaitForLine("web view:", 10*time.Second) {
			t.Fatalf("no web view:\n%s", w.Stderr.String())
		}
		time.Sleep(1200 * time.Millisecond) // two scrapes: rates
		dom := chromiumDOM(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
		if !strings.Contains(dom, `data-stage="receiver0/consumer"`) || regexp.MustCompile(`data-updates="0"`).MatchString(dom) ||
			!regexp.MustCompile(`(HEALTHY|DONTCARE)`).MatchString(dom) || !strings.Contains(dom, `data-worker="sender0/thread0" data-kind="pacing"`) {
			t.Fatalf("the page in Chromium:\n%s", dom)
		}
	})
}
