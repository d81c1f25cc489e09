package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/sweep/watch"
)

// liveWindows runs a one-rate sweep (args), watches its agents with
// cpsweep watch --json for 5.5 s from 2 s into the trial, and returns
// every whole window the watch showed, by start (the latest view of it).
func liveWindows(t *testing.T, args []string) []watch.CPWindow {
	t.Helper()
	sw, err := Start(filepath.Join(binDir, "cpsweep"), append(append(args, hostTolerant...), "--results", t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sw.Cmd.Process.Kill(); _ = sw.Wait(10 * time.Second) }()
	if !sw.WaitForLine("results in", 30*time.Second) {
		t.Fatalf("the sweep did not start:\n%s", sw.Stderr.String())
	}
	m := regexp.MustCompile(`senders (\S+) -> receivers (\S+)`).FindStringSubmatch(sw.Stderr.String())
	if m == nil {
		t.Fatalf("no agent addresses in:\n%s", sw.Stderr.String())
	}
	time.Sleep(2 * time.Second)
	out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "watch", "--sender", m[1], "--receiver", m[2],
		"--interval", "1s", "--for", "5500ms", "--json").Output()
	if err != nil {
		t.Fatalf("watch: %v\n%s", err, out)
	}
	byStart := map[string]watch.CPWindow{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v watch.View
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		for _, w := range v.CPWindows {
			byStart[w.Start] = w
		}
	}
	var ws []watch.CPWindow
	for _, w := range byStart {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
	return ws
}

// topOf is a window's largest share as "worker kind value".
func topOf(w watch.CPWindow) (string, float64) {
	if !w.HasPath || len(w.Top) == 0 {
		return "no path", 0
	}
	return w.Top[0].Worker + " " + w.Top[0].Kind, w.Top[0].Value
}

// Issue #15's live view against the runs of TestBenchActivityGraph
// (CP_BENCH_LIVE_RUNS, default 3): the critical participation cpsweep watch
// shows, window by window, in a consumer-bound run (a consumer at 15 us a
// tuple offered 60 k/s) and a sender-bound one (20 us of work per bucket
// of 10, offered 8 M/s into --drain). The live graph has local edges only
// (docs/activity.md): a paced sender that is not blocked is a path of its
// own, so the consumer's share is about 0.5 live where the offline graph
// gives 0.95 or more; the top stage is what must flip.
func TestBenchLiveCriticalParticipation(t *testing.T) {
	benchOnly(t)
	runs := 3
	if v, err := strconv.Atoi(os.Getenv("CP_BENCH_LIVE_RUNS")); err == nil && v > 0 {
		runs = v
	}
	cases := []struct {
		name, want string
		args       []string
	}{
		{"consumer-bound", "receiver0/consumer consume", []string{"--search", "linear", "--from", "60k", "--to", "60k", "--step", "1k",
			"--duration", "10s", "--warmup", "300ms", "--work", "15us", "--bucket", "10", "--lateness-floor", "500ms"}},
		{"sender-bound", "sender0/thread0 send", []string{"--search", "linear", "--from", "8M", "--to", "8M", "--step", "1k",
			"--duration", "10s", "--warmup", "300ms", "--drain", "--bucket", "10", "--send-work", "20us", "--lateness-floor", "500ms"}},
	}
	for _, c := range cases {
		windows, top, incomplete := 0, 0, 0
		var values, others []string
		for i := 0; i < runs; i++ {
			for _, w := range liveWindows(t, c.args) {
				name, v := topOf(w)
				windows++
				if name == c.want {
					top++
					values = append(values, fmt.Sprintf("%.2f", v))
				} else {
					others = append(others, fmt.Sprintf("%s %.2f", name, v))
				}
				if w.Incomplete {
					incomplete++
				}
				t.Logf("%s run %d: %s  top %s %.2f  incomplete %v", c.name, i+1, w.Start[11:19], name, v, w.Incomplete)
			}
		}
		t.Logf("LIVE %s: %q on top in %d of %d whole 1 s windows (values %s); others on top: %v; %d incomplete",
			c.name, c.want, top, windows, strings.Join(values, " "), others, incomplete)
		if windows == 0 || top*4 < windows*3 {
			t.Errorf("%s: %q on top in %d of %d windows, want at least 3 in 4", c.name, c.want, top, windows)
		}
	}
}
