package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/rundir"
)

// dashboard is the part of deploy/grafana's dashboard the test reads.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestGrafanaDashboardQueries runs every query of the Grafana dashboard
// against a real Prometheus (Debian's, started here on a free loopback
// port) that scraped two real agents through a real sweep: one trial at
// 20 k/s for 8 s. Every query must return data at an instant inside the
// trial's measured window, and the rate panel's figures must agree with
// the sweep's own: the target exactly, emitted and consumed within 2% of
// the trial's achieved rate.
func TestGrafanaDashboardQueries(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		skipOrFail(t, "no prometheus here (apt-get install prometheus; make test installs it): the dashboard's queries are not checked")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "cloudprofiler-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash dashboard
	if err := json.Unmarshal(b, &dash); err != nil || len(dash.Panels) == 0 {
		t.Fatalf("dashboard: %v (%d panels)", err, len(dash.Panels))
	}
	recv, snd := startAgents(t)
	ra, sa := agentAddr(t, recv), agentAddr(t, snd)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\nscrape_configs:\n  - job_name: cp\n    static_configs:\n      - targets: [%q, %q]\n", ra, sa)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", mustPort(t))
	p, err := Start(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(base, "http://"), "--log.level=warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cmd.Process.Kill(); _ = p.Wait(10 * time.Second) })
	client := httpapi.NewClient(10 * time.Second)
	ready := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !ready; time.Sleep(200 * time.Millisecond) {
		if r, err := client.Get(base + "/-/ready"); err == nil {
			ready = r.StatusCode == 200
			r.Body.Close()
		}
	}
	if !ready {
		t.Fatalf("prometheus did not get ready:\n%s", p.Stderr.String())
	}
	// Prometheus applies its targets a few seconds after it is ready (its
	// scrape manager reloads every 5 s): the sweep starts once both agents
	// have been scraped, or the trial's first seconds would have no samples.
	scraped := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !scraped; time.Sleep(250 * time.Millisecond) {
		r, err := client.Get(base + "/api/v1/query?" + url.Values{"query": {"sum(up)"}}.Encode())
		if err != nil {
			continue
		}
		var res struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(r.Body).Decode(&res) == nil && len(res.Data.Result) == 1 && res.Data.Result[0].Value[1] == "2" {
			scraped = true
		}
		r.Body.Close()
	}
	if !scraped {
		t.Fatalf("prometheus did not scrape both agents within 30 s:\n%s", p.Stderr.String())
	}
	const rate = 20e3
	rep, _ := runSweepAllowing(t, 2*time.Minute, nil, "--sender", sa, "--receiver", ra, "--search", "linear", "--from", "20k", "--to", "20k", "--step", "10k",
		"--duration", "8s", "--warmup", "1s", "--bucket", "10", "--lateness-floor", "100ms")
	if len(rep.Result.Trials) != 1 {
		t.Fatalf("%d trials", len(rep.Result.Trials))
	}
	d, err := rundir.Open(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := d.Trial(d.Summary.Result.Trials[0].N)
	if err != nil || f.Outcome == nil || f.Outcome.Window[1] == 0 {
		t.Fatalf("trial file: %v", err)
	}
	achieved := rep.Result.Trials[0].Achieved
	at := time.Unix(0, f.Outcome.Window[1]).Add(-time.Second) // 5 s of rate inside the 8 s window
	time.Sleep(time.Second)                                   // the scrapes up to it are stored
	query := func(expr string) (float64, int) {
		q := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 3, 64)}}
		r, err := client.Get(base + "/api/v1/query?" + q.Encode())
		if err != nil {
			t.Fatalf("query %s: %v", expr, err)
		}
		defer r.Body.Close()
		var res struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&res); err != nil || res.Status != "success" {
			t.Fatalf("query %s: %v %s %s", expr, err, res.Status, res.Error)
		}
		if len(res.Data.Result) == 0 {
			return math.NaN(), 0
		}
		s, _ := res.Data.Result[0].Value[1].(string)
		v, _ := strconv.ParseFloat(s, 64)
		return v, len(res.Data.Result)
	}
	for _, panel := range dash.Panels {
		for _, tg := range panel.Targets {
			expr := strings.ReplaceAll(tg.Expr, "$__rate_interval", "5s")
			v, n := query(expr)
			if n == 0 {
				t.Errorf("%s (%s): no data: %s", panel.Title, tg.RefID, expr)
				continue
			}
			want, tol := "", 0.0
			if panel.Title == "Target, emitted and consumed rate" {
				switch tg.RefID {
				case "A":
					want, tol = fmt.Sprintf("target %.0f", rate), 1e-9
					if math.Abs(v/rate-1) > tol {
						t.Errorf("%s: %s = %.0f, the sweep's target %.0f", panel.Title, expr, v, rate)
					}
				case "B", "C":
					want, tol = fmt.Sprintf("achieved %.0f", achieved), 0.02
					if math.Abs(v/achieved-1) > tol {
						t.Errorf("%s: %s = %.0f, the sweep's achieved rate %.0f (more than 2%% apart)", panel.Title, expr, v, achieved)
					}
				}
			}
			t.Logf("DASHBOARD %s [%s] %s = %.6g (%d series)%s", panel.Title, tg.RefID, expr, v, n, map[bool]string{true: "; the sweep's " + want}[want != ""])
		}
	}
}
