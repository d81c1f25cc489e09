package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/analysis/report"
	"github.com/cloudprofiler-go/cp/rundir"
)

// TestHostileReportEscapesEveryString: a real profiled run, analysed, then
// every string of every JSON file of its run directory replaced in turn
// by markup (an element with an event handler, and a quote that would
// close an attribute): report.html never holds the markup as markup.
func TestHostileReportEscapesEveryString(t *testing.T) {
	dir := profiledRun(t, "html", "--profile-rate", "100k")
	for _, args := range [][]string{{"analyze", "--pag", dir}, {"diagnose", dir}} {
		if out, err := exec.Command(filepath.Join(binDir, "cpsweep"), args...).CombinedOutput(); err != nil && ExitCode(err) != 1 {
			t.Fatalf("cpsweep %s: %v\n%s", args[0], err, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	trials, _ := filepath.Glob(filepath.Join(dir, "trials", "*.json"))
	files = append(files, trials...)
	sort.Strings(files)
	tried, start := 0, time.Now()
	for _, file := range files {
		orig, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if json.Unmarshal(orig, &v) != nil {
			continue
		}
		var all, leaves [][]any
		leafPaths(v, nil, &all)
		// every field once: the first string at each path with its array
		// indices left out (trials 1 and 7 render through the same code)
		seen := map[string]bool{}
		for _, path := range all {
			var key strings.Builder
			for _, p := range path {
				if k, ok := p.(string); ok {
					key.WriteString("." + k)
				} else {
					key.WriteString("[]")
				}
			}
			if !seen[key.String()] {
				seen[key.String()] = true
				leaves = append(leaves, path)
			}
		}
		for i, path := range leaves {
			payload := fmt.Sprintf(`"'><img src=x onerror=cpxss(%d)><svg onload=cpxss(%d)>`, i, i)
			b, err := json.Marshal(setLeaf(v, path, payload))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := rundir.Open(dir)
			if err != nil {
				continue // a string the reader refuses whole is no page
			}
			html, _, err := report.Build(d)
			if err != nil {
				continue
			}
			tried++
			page := string(html)
			for _, raw := range []string{"<img", "<svg onload", `"'>`} {
				if strings.Contains(page, raw) {
					at := strings.Index(page, raw)
					t.Errorf("%s at %v: the page holds %q raw: …%s…", filepath.Base(file), path, raw, page[max(0, at-120):min(len(page), at+80)])
				}
			}
		}
		if err := os.WriteFile(file, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d strings of %d files tried in %v", tried, len(files), time.Since(start).Round(time.Millisecond))
	if tried < 100 {
		t.Errorf("only %d strings tried", tried)
	}
}
