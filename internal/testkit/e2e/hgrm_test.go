package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hdrDecoded is what HdrHistogram's JavaScript port (hdr-histogram-js,
// from the npm registry) reads in dgrecv's .hlog: testdata/hdrdecode.
type hdrDecoded struct {
	Count      int64   `json:"count"`
	Min        int64   `json:"min"`
	Max        int64   `json:"max"`
	P50        int64   `json:"p50"`
	P90        int64   `json:"p90"`
	P99        int64   `json:"p99"`
	P999       int64   `json:"p999"`
	IntervalMs float64 `json:"interval_ms"`
	Hgrm       string  `json:"hgrm"`
}

// TestHgrmReadByHdrHistogram: dgrecv --hgrm writes the run's latency as a
// .hgrm and its histogram as an interval log (.hlog). HdrHistogram's own
// JavaScript port decodes the log: its count and percentiles are the
// tool's own (the result's JSON), and the .hgrm it prints from the
// decoded histogram is dgrecv's .hgrm line for line, every value within
// the histogram's rounding.
func TestHgrmReadByHdrHistogram(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "node is not installed (apt-get install nodejs npm): HdrHistogram's JavaScript port needs it")
	}
	decoder := npmCopy(t, filepath.Join("testdata", "hdrdecode"), "decode.js")
	out := t.TempDir()
	hgrm := filepath.Join(out, "latency.hgrm")
	pr := &Pair{Bin: binDir,
		RecvArgs: []string{"--expect-streams", "2", "--hgrm", hgrm},
		SendArgs: []string{"--rate", "40k", "--threads", "2", "--bucket", "4", "--count", "30000", "--duration", "0"}}
	pr.Run(t)
	if pr.RecvExit != 0 || pr.Recv.Latency.Count != 30000 {
		t.Fatalf("dgrecv exit %d, latency of %d tuples:\n%s", pr.RecvExit, pr.Recv.Latency.Count, pr.RecvProc.Stderr.String())
	}
	cmd := exec.Command(node, filepath.Join(decoder, "decode.js"), filepath.Join(out, "latency.hlog"))
	cmd.Dir = decoder
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("HdrHistogram's decoder on the .hlog: %v\n%s", err, exitStderr(err))
	}
	var d hdrDecoded
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("decoder output: %v\n%s", err, b)
	}
	own := pr.Recv.Latency
	if d.Count != int64(own.Count) || d.IntervalMs < 0 || d.IntervalMs > 60_000 {
		t.Fatalf("decoded %d values over %v ms; dgrecv recorded %d", d.Count, d.IntervalMs, own.Count)
	}
	// dgrecv reports a percentile as its bucket's top, never above the
	// exact maximum; HdrHistogram reports the bucket's top.
	for _, c := range []struct {
		name      string
		theirs    int64
		ours, rnd int64
	}{
		{"p50", d.P50, own.P50, own.Rounding.P50}, {"p90", d.P90, own.P90, own.Rounding.P90},
		{"p99", d.P99, own.P99, own.Rounding.P99}, {"p99.9", d.P999, own.P999, own.Rounding.P999},
		{"max", d.Max, own.Max, own.Max / 1000}, {"min", d.Min, own.Min, own.Min / 1000},
	} {
		if c.theirs < c.ours-c.rnd-1 || c.theirs > c.ours+c.rnd+1 {
			t.Errorf("%s: HdrHistogram reads %d ns, dgrecv reported %d ns (rounding %d)", c.name, c.theirs, c.ours, c.rnd)
		}
	}
	ourLines, theirLines := hgrmLines(t, readString(t, hgrm)), hgrmLines(t, d.Hgrm)
	if len(ourLines) < 20 || len(ourLines) != len(theirLines) {
		t.Fatalf("dgrecv's .hgrm has %d brackets, HdrHistogram's print of the decoded histogram %d:\n%s\n%s", len(ourLines), len(theirLines), readString(t, hgrm), d.Hgrm)
	}
	for i, o := range ourLines {
		h := theirLines[i]
		// the percentile printed to 12 places, its last rounded either way
		if math.Abs(o.percentile-h.percentile) > 2e-12 || o.count != h.count || math.Abs(o.valueMs-h.valueMs) > h.valueMs/1000+0.001 {
			t.Errorf("bracket %d: dgrecv %+v, HdrHistogram %+v", i, o, h)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d brackets agree; p50 %d ns, p99 %d ns, max %d ns", len(ourLines), d.P50, d.P99, d.Max)
}

// hgrmLine is one bracket of a .hgrm print.
type hgrmLine struct {
	valueMs, percentile float64
	count               int64
}

// hgrmLines reads a .hgrm's brackets (lines of numbers: value,
// percentile, count and 1/(1-percentile), which the JavaScript port
// leaves blank at 100%), checking its header and footer are there.
func hgrmLines(t *testing.T, text string) []hgrmLine {
	t.Helper()
	if !strings.HasPrefix(strings.TrimSpace(text), "Value     Percentile TotalCount 1/(1-Percentile)") || !strings.Contains(text, "#[Max     =") {
		t.Fatalf("not a .hgrm:\n%s", text)
	}
	var lines []hgrmLine
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || len(f) > 4 || strings.HasPrefix(f[0], "#") || f[0] == "Value" {
			continue
		}
		v, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		n, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bracket %q does not read", sc.Text())
		}
		lines = append(lines, hgrmLine{v, p, n})
	}
	return lines
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exitStderr is what a failed command said on its standard error.
func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return fmt.Sprint(err)
}
