package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/diagnose"
	"github.com/cloudprofiler-go/cp/internal/testkit/dnszone"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/rundir"
	"github.com/cloudprofiler-go/cp/sweep"
)

// startJobAgent starts cpjob ysb serving its operators' accounting as an
// agent on a free loopback port, and returns that port's address.
func startJobAgent(t *testing.T, in, out, redisAddr string, extra ...string) string {
	t.Helper()
	job := startJob(t, append([]string{"ysb", "--input", in + "?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms",
		"--agent-addr", "127.0.0.1:0"}, extra...)...)
	if !job.WaitForLine("cpjob: agent ready", 30*time.Second) {
		t.Fatalf("cpjob's agent did not start:\n%s", job.Stderr.String())
	}
	m := regexp.MustCompile(`cpjob: agent ready: control http://([0-9.:]+)/v1`).FindStringSubmatch(job.Stderr.String())
	if m == nil {
		t.Fatalf("no agent address in:\n%s", job.Stderr.String())
	}
	return m[1]
}

// ysbMetricsArgs are cpsweep's flags that read a running cpjob ysb's
// operators from its metrics (--metrics-addr): its address, and a mapping
// file naming the job and its edges.
func ysbMetricsArgs(t *testing.T, job *Proc) []string {
	t.Helper()
	m := regexp.MustCompile(`the operators' accounting on (http://[0-9.:]+/metrics)`).FindStringSubmatch(job.Stderr.String())
	if m == nil {
		t.Fatalf("no metrics address in cpjob's output:\n%s", job.Stderr.String())
	}
	mapping := filepath.Join(t.TempDir(), "ysb.yaml")
	if err := os.WriteFile(mapping, []byte("job: ysb\nedges: [[input, filter], [filter, join], [join, window]]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--job-metrics", m[1], "--job-metrics-map", mapping}
}

// TestSweepNamesTheJobsOperator: a job that serves its operators'
// accounting (cpjob --agent-addr, cpsweep --job-agent) is no longer one
// black box: its operators are stages of every trial's diagnosis, between
// the broker and the lanes, joined by its edges, and the one made slow
// (an injected limit) is the trial's limit, by name, on the sweep's line,
// in trials.json and in diagnosis.json (whose TSC relation has the job).
func TestSweepNamesTheJobsOperator(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	for _, tc := range []struct {
		name, want string
		work       []string
	}{
		{"join", "ysb/join", []string{"--join-work", "400us"}},
		{"window", "ysb/window", []string{"--window-work", "300us"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := "jetstream://"+natsAddr+"/op"+tc.name+".in", "jetstream://"+natsAddr+"/op"+tc.name+".out"
			addr := startJobAgent(t, in, out, redisAddr, tc.work...)
			rep, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, jobSweepArgs(in, out,
				"--search", "linear", "--from", "15k", "--to", "15k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms", "--job-agent", addr, "--clock")...)
			if len(rep.Result.Trials) != 1 {
				t.Fatalf("%d trials\n%s", len(rep.Result.Trials), p.Stderr.String())
			}
			var tf struct {
				Trial struct {
					Limiting string `json:"limiting_stage"`
					Evidence string `json:"limiting_evidence"`
				} `json:"trial"`
				Outcome struct {
					Jobs []struct {
						Name  string      `json:"name"`
						Edges [][2]string `json:"edges"`
					} `json:"jobs"`
				} `json:"outcome"`
			}
			if b, err := os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json")); err != nil || json.Unmarshal(b, &tf) != nil {
				t.Fatalf("trials/001.json: %v", err)
			}
			if len(tf.Outcome.Jobs) != 1 || tf.Outcome.Jobs[0].Name != "ysb" || !slices.Contains(tf.Outcome.Jobs[0].Edges, [2]string{"join", "window"}) {
				t.Errorf("the trial's jobs: %+v; want ysb with join -> window", tf.Outcome.Jobs)
			}
			t.Log(p.Stderr.String())
			if tf.Trial.Limiting != tc.want || !strings.Contains(p.Stderr.String(), tc.want) {
				t.Errorf("limiting %q (%s), want %s; the sweep:\n%s", tf.Trial.Limiting, tf.Trial.Evidence, tc.want, p.Stderr.String())
			}
			var rf diagnose.RunFile
			if b, err := os.ReadFile(filepath.Join(rep.Dir, rundir.DiagnosisFile)); err != nil || json.Unmarshal(b, &rf) != nil || len(rf.Trials) != 1 {
				t.Fatalf("diagnosis.json: %v", err)
			}
			d := rf.Trials[0].Diagnosis
			if d.Limiting != tc.want || !strings.HasPrefix(d.Aligned, "TSC relation") || !slices.Contains(d.Edges, [2]string{"ysb/join", "ysb/window"}) {
				t.Errorf("diagnosis.json: limiting %q (%s), aligned %q, edges %v", d.Limiting, d.Evidence, d.Aligned, d.Edges)
			}
			if b, err := os.ReadFile(filepath.Join(rep.Dir, "relation.json")); err != nil || !strings.Contains(string(b), `"job0"`) {
				t.Errorf("relation.json has no job0 (%v)", err)
			}
		})
	}
}

// TestSweepReadsAJobsPrometheusMetrics: a job known only by the metrics
// it exports under Flink's names (cpjob --metrics-addr; cpsweep
// --job-metrics, with a mapping file naming the job and its edges) is
// diagnosed as the agent's API would have it: its slow join is the
// trial's limit and its service rate the next limit's stage.
func TestSweepReadsAJobsPrometheusMetrics(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	in, out := "jetstream://"+natsAddr+"/prom.in", "jetstream://"+natsAddr+"/prom.out"
	job := startJob(t, "ysb", "--input", in+"?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms",
		"--metrics-addr", "127.0.0.1:0", "--join-work", "400us")
	rep, p := runSweepAllowing(t, 2*time.Minute, []int{sweep.ExitNoRatePassed}, jobSweepArgs(in, out,
		append([]string{"--search", "linear", "--from", "15k", "--to", "15k", "--step", "5k", "--duration", "3s", "--stage-period", "100ms"}, ysbMetricsArgs(t, job)...)...)...)
	t.Log(p.Stderr.String())
	var tf struct {
		Trial struct {
			Limiting  string `json:"limiting_stage"`
			NextLimit *struct {
				Stage string `json:"stage"`
			} `json:"next_limit"`
		} `json:"trial"`
	}
	if b, err := os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json")); err != nil || json.Unmarshal(b, &tf) != nil {
		t.Fatalf("trials/001.json: %v", err)
	}
	if tf.Trial.Limiting != "ysb/join" || tf.Trial.NextLimit == nil || tf.Trial.NextLimit.Stage != "ysb/join" {
		t.Errorf("limiting %q, next limit %+v; want ysb/join for both", tf.Trial.Limiting, tf.Trial.NextLimit)
	}
}

// TestSweepFindsAJobAgentByDNS: a job agent named by DNS (--jobs-from, as
// a headless Service lists a job's pods) is found and joins the trial,
// with the sweep's own local agents.
func TestSweepFindsAJobAgentByDNS(t *testing.T) {
	natsAddr, _ := realserver.NATS(t)
	redisAddr, _ := realserver.Redis(t)
	port, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	in, out := "jetstream://"+natsAddr+"/dnsjob.in", "jetstream://"+natsAddr+"/dnsjob.out"
	job := startJob(t, "ysb", "--input", in+"?group=ysb", "--output", out, "--redis", redisAddr, "--window", "1s", "--lateness", "500ms",
		"--agent-addr", fmt.Sprintf("127.0.0.5:%d", port))
	if !job.WaitForLine("cpjob: agent ready", 30*time.Second) {
		t.Fatalf("cpjob's agent:\n%s", job.Stderr.String())
	}
	z, err := dnszone.Serve()
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	z.Set("ysb-job.cp.svc.cluster.local", "127.0.0.5")
	rep, p := runSweep(t, 2*time.Minute, jobSweepArgs(in, out, "--search", "linear", "--from", "5k", "--to", "5k", "--step", "5k", "--stage-period", "100ms",
		"--dns-server", z.Addr(), "--jobs-from", fmt.Sprintf("dns:ysb-job.cp.svc.cluster.local:%d", port))...)
	if want := fmt.Sprintf("job agents at dns:ysb-job.cp.svc.cluster.local:%d: [127.0.0.5:%d]", port, port); !strings.Contains(p.Stderr.String(), want) {
		t.Errorf("the sweep does not say it found the job (%q):\n%s", want, p.Stderr.String())
	}
	var tf struct {
		Outcome struct {
			Jobs []struct {
				Name string `json:"name"`
			} `json:"jobs"`
		} `json:"outcome"`
	}
	if b, err := os.ReadFile(filepath.Join(rep.Dir, "trials", "001.json")); err != nil || json.Unmarshal(b, &tf) != nil || len(tf.Outcome.Jobs) != 1 || tf.Outcome.Jobs[0].Name != "ysb" {
		t.Errorf("the trial's jobs: %+v (%v)", tf.Outcome.Jobs, err)
	}
}
