package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis"
)

// TestProfiledSweepReport is the demo's path: a sweep with TSC probing and
// a profiled trial, the logs collected from the agents, the analysis
// (every standard pair joined, cross-node latencies bounded), and the HTML
// report, which must render in headless Chromium with every plot drawn.
func TestProfiledSweepReport(t *testing.T) {
	dir := t.TempDir()
	handlers := filepath.Join(dir, "handlers.yaml")
	if err := os.WriteFile(handlers, []byte("default: {handler: buffered, path: \"{name}.log\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, p := runSweep(t, 3*time.Minute, "--search", "linear", "--from", "50k", "--to", "100k", "--step", "50k", "--duration", "1s",
		"--warmup", "200ms", "--bucket", "10", "--clock", "--profile", handlers, "--name", "report", "--verbose",
		"--lateness-floor", "500ms") // a test of the report, not of this host's timing: a busy host must not fail these rates

	if !strings.Contains(p.Stderr.String(), "collected") {
		t.Fatalf("no profile collected:\n%s", p.Stderr.String())
	}
	out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "analyze", "--json", rep.Dir).Output()
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, out)
	}
	var an analysis.Report
	if err := json.Unmarshal(out, &an); err != nil {
		t.Fatal(err)
	}
	pairs := map[string]analysis.PairResult{}
	for _, pr := range an.Pairs {
		pairs[pr.From+">"+pr.To] = pr
	}
	for _, want := range []struct {
		pair, group string
		bounded     bool
	}{{"emit>receive", "same machine", false}, {"receive>deserialized", "same node", false}, {"deserialized>consumed", "same node", false}, {"emit>consumed", "same machine", false}} {
		pr, ok := pairs[want.pair]
		if !ok || len(pr.Groups) != 1 || pr.Groups[0].Name != want.group || pr.Groups[0].Latency.Count < 50_000 || pr.OnlyFrom != 0 || pr.OnlyTo != 0 {
			t.Fatalf("%s: %+v\nproblems: %v", want.pair, pr, an.Problems)
		}
		if e := pr.Groups[0].Error; want.bounded != (e.P50 > 0) {
			t.Fatalf("%s: error bound %+v (one machine: one clock, so every pair is exact)", want.pair, e)
		}
	}
	if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), "report", rep.Dir).CombinedOutput(); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	page := filepath.Join(rep.Dir, "report.html")
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(src|href)="(https?:)?//`).Find(html); m != nil {
		t.Fatalf("the report loads %s from elsewhere: it must be self-contained", m)
	}
	for _, id := range []string{"fig-sweep", "fig-lateness", "fig-percentiles", "fig-cpu", "fig-sweep-throughput", "fig-distribution", "fig-latency", "fig-clock", "fig-throughput"} {
		if !strings.Contains(string(html), `id="`+id+`"`) {
			t.Errorf("report has no %s", id)
		}
	}
	// One machine, one clock: every bound is 0, said in a sentence rather
	// than drawn as flat lines.
	if strings.Contains(string(html), `id="fig-error"`) || !strings.Contains(string(html), "every latency here is exact") {
		t.Error("a one-machine run's error bounds are drawn, or not said to be exact")
	}
	t.Run("chromium", func(t *testing.T) { checkInChromium(t, page, 6) })
	t.Run("self-check catches", func(t *testing.T) { selfCheckCatches(t, page) })
	// cpsweep compare of the run with a copy of it (the same run twice is
	// refused): the same plan on the same machines, and its page checks
	// itself as the report does.
	cmpPage := filepath.Join(t.TempDir(), "compare.html")
	copied := filepath.Join(t.TempDir(), filepath.Base(rep.Dir))
	if err := os.CopyFS(copied, os.DirFS(rep.Dir)); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(filepath.Join(binDir, "cpsweep"), "compare", "--html", cmpPage, rep.Dir, copied).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 runs, 2 with an answer to use; same plan on the same machines") {
		t.Fatalf("compare: %v\n%s", err, out)
	}
	t.Run("compare in chromium", func(t *testing.T) { checkInChromium(t, cmpPage, 2) })
	// CP_DOCS_SCREENSHOTS=1 refreshes the screenshots in docs/ from the
	// pages this test has just checked, at the width they are read at.
	if os.Getenv("CP_DOCS_SCREENSHOTS") != "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		screenshot(t, page, filepath.Join(root, "docs", "report-1400.png"), 5200)
		screenshot(t, cmpPage, filepath.Join(root, "docs", "compare-1400.png"), 2000)
	}
}

// screenshot saves the top height px of a page at 1400 px wide.
func screenshot(t *testing.T, page, png string, height int) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium for the screenshots: %v", err)
	}
	out, err := exec.Command("timeout", "90", bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir="+t.TempDir(), fmt.Sprintf("--window-size=1400,%d", height), "--virtual-time-budget=5000", "--screenshot="+png, "file://"+page).CombinedOutput()
	if err != nil {
		t.Fatalf("screenshot %s: %v\n%s", png, err, out)
	}
	t.Logf("wrote %s", png)
}

// selfCheckCatches breaks a copy of the page in each way its self-check
// looks for, and requires the check to say so.
func selfCheckCatches(t *testing.T, page string) {
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, says string
		mutate     func(string) string
	}{
		{"a point beyond the axes", "points on or outside the axes", func(s string) string {
			return regexp.MustCompile(`(id="fig-percentiles" data-check="\{&#34;area&#34;:\[[^\]]*\],&#34;marks&#34;:\[\[)`).ReplaceAllString(s, "${1}-999,")
		}},
		{"a label outside the canvas", "label &quot;stray&quot;", func(s string) string {
			return strings.Replace(s, "</svg>", `<text x="-400" y="20">stray</text></svg>`, 1) // the sweep plot's
		}},
		{"the legend over the plot", "the legend covers the plot", func(s string) string {
			return strings.Replace(s, "ul.legend {", "ul.legend { margin-top: -200px !important; position: relative;", 1)
		}},
		{"a table wider than the page", "a column is cut off", func(s string) string {
			return strings.Replace(s, "</table>", "<tr><td>"+strings.Repeat("wide ", 400)+"</td></tr></table>", 1)
		}},
		{"a cell over three lines", "lines tall: at most 3", func(s string) string {
			return strings.Replace(s, `<td class="why">`, `<td class="why">`+strings.Repeat("a detail that belongs behind a click ", 40), 1)
		}},
		{"the answer outside the axes", "the answer's interval is outside the axes", func(s string) string {
			return regexp.MustCompile(`(&#34;band&#34;:\[)`).ReplaceAllString(s, "${1}-500,")
		}},
	} {
		broken := tc.mutate(string(html))
		if broken == string(html) {
			t.Fatalf("%s: the mutation did not apply", tc.name)
		}
		path := filepath.Join(t.TempDir(), "broken.html")
		if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		if body := chromiumBody(t, path); !strings.Contains(body, tc.says) {
			t.Errorf("%s: the self-check did not say %q: %s", tc.name, tc.says, body)
		}
	}
}

// chromiumBody loads the page in headless Chromium and returns its <body>
// tag, where the page's self-check leaves its verdict.
func chromiumBody(t *testing.T, page string) string {
	t.Helper()
	return regexp.MustCompile(`<body[^>]*>`).FindString(chromiumDOM(t, "file://"+page))
}

// chromiumDOM loads url in headless Chromium, lets its scripts run for 5 s
// of virtual time and returns the DOM.
func chromiumDOM(t *testing.T, url string) string {
	t.Helper()
	bin := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		skipOrFail(t, "no Chromium here (apt-get install chromium; .ci/run installs it): the rendering check is skipped")
	}
	// At 1400 px, the width the report is read at: its self-check fails
	// when a table's cell is cut or off-screen there.
	out, err := exec.Command("timeout", "90", bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--window-size=1400,1000",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=5000", "--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

// checkInChromium loads the page headless and reads the verdict the page's
// own check leaves on <body>: every figure drawn and no script error.
func checkInChromium(t *testing.T, page string, figures int) {
	t.Helper()
	body := chromiumBody(t, page)
	if !strings.Contains(body, `data-check="ok"`) || !strings.Contains(body, `data-figures="`) {
		t.Fatalf("the page's own check failed in Chromium: %s", body)
	}
	m := regexp.MustCompile(`data-figures="(\d+)"`).FindStringSubmatch(body)
	if n, _ := strconv.Atoi(m[1]); n < figures {
		t.Fatalf("Chromium saw %d figures, want %d: %s", n, figures, body)
	}
	t.Logf("Chromium: %s", body)
}
