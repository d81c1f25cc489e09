package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/rundir"
)

// TestPartialRunDirectory: a run directory with a summary but no trial
// details, relation or profiles still renders, with what it has and
// nothing it lacks.
func TestPartialRunDirectory(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "partial", "topology": "1 sender, 1 receiver",
			"result": {"method": "fast", "last_pass": 1000000, "first_fail": 1010000, "trials": [
			{"n": 1, "rate": 1000000, "achieved": 999000, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 2, "rate": 1010000, "achieved": 900000, "purpose": "close", "verdict": {"pass": false, "checks": [{"rule": "lateness", "pass": false, "detail": "p99 too high"}]}}]}}`,
		"config.json": `{"args": ["cpsweep"]}`,
	}
	html := buildFrom(t, dir, files)
	page := html
	for _, want := range []string{`id="fig-sweep"`, "between 1.000 M/s (passed) and 1.010 M/s (failed)", "lateness: p99 too high", "<details>",
		"This run has no profiled trial", "--clock --profile profiles/default.yaml"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, absent := range []string{`id="fig-latency"`, `id="fig-clock"`, "<script src"} {
		if strings.Contains(page, absent) {
			t.Errorf("report has %q without the data for it", absent)
		}
	}
}

// TestReportStatesTheBoundary: the answer in the report is the sweep's own
// statement of it (the boundary's repeats, the spread and the search's
// resolution), not an interval re-derived from the two rates.
func TestReportStatesTheBoundary(t *testing.T) {
	statement := "1.000 M/s, passed 3 of 3 runs; 1.010 M/s failed 3 of 3: reproducible to +1%, the search's resolution"
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "b", "result": {"method": "fast", "last_pass": 1000000, "first_fail": 1010000,
			"boundary": {"runs": 3, "resolution": 0.01, "spread": 0.01, "reproducible": true, "statement": "` + statement + `"}, "trials": [
			{"n": 1, "rate": 1000000, "achieved": 999000, "purpose": "ramp", "verdict": {"pass": true}}]}}`,
	}
	page := buildFrom(t, t.TempDir(), files)
	if !strings.Contains(page, "1.000 M/s, passed 3 of 3 runs; 1.010 M/s failed 3 of 3: reproducible to &#43;1%, the search&#39;s resolution") || strings.Contains(page, "(passed) and") {
		t.Errorf("the report does not state the sweep's boundary %q", statement)
	}
}

// TestReportSaysWhyTheProfileIsMissing: a sweep that asked for a profile
// and skipped it says why in the latency section, instead of dropping it.
func TestReportSaysWhyTheProfileIsMissing(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "skipped", "profile_skipped": "no rate passed, so there is no rate to profile at",
			"result": {"method": "fast", "last_pass": 0, "first_fail": 1000, "trials": [
			{"n": 1, "rate": 1000, "achieved": 10, "purpose": "ramp", "verdict": {"pass": false}}]}}`,
	}
	html := buildFrom(t, dir, files)
	if want := "asked for but skipped: no rate passed, so there is no rate to profile at"; !strings.Contains(html, want) {
		t.Errorf("report lacks %q", want)
	}
}

// buildFrom writes files into dir as a run directory and renders its
// report.
func buildFrom(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, _, err := Build(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(html)
}

// TestDiagnosisTimeline: a run with diagnosis.json shows the trial that
// set the limit as a label timeline, with its limiting stage and summary.
func TestDiagnosisTimeline(t *testing.T) {
	dir := t.TempDir()
	snaps := `{"t_unix_ns": 1100000000, "labels": ["HEALTHY", "HEALTHY"], "ranks": [0, 1], "limiting": "consumer"},
		{"t_unix_ns": 1200000000, "labels": ["BLOCKED", "STALLED"], "ranks": [0, 1], "limiting": "consumer"},
		{"t_unix_ns": 1300000000, "labels": ["BLOCKED", "STALLED"], "ranks": [0, 0]}`
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "diag", "result": {"method": "fast", "last_pass": 1000, "first_fail": 1100, "trials": [
			{"n": 1, "rate": 1000, "achieved": 1000, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 2, "rate": 1100, "achieved": 900, "purpose": "close", "verdict": {"pass": false}}]}}`,
		"diagnosis.json": `{"format_version": 1, "confirm": 2, "period_ns": 100000000, "trials": [
			{"n": 1, "rate": 1000, "purpose": "ramp", "pass": true, "period_ns": 100000000, "confirm": 2, "aligned": "one process",
			 "modules": [{"name": "lane0"}, {"name": "consumer"}], "snapshots": [` + snaps + `], "summary": [], "stalls": [], "limiting_stage": "none"},
			{"n": 2, "rate": 1100, "purpose": "close", "pass": false, "period_ns": 100000000, "confirm": 2, "aligned": "TSC relation into receiver0",
			 "modules": [{"name": "lane0"}, {"name": "consumer"}], "snapshots": [` + snaps + `],
			 "summary": [{"stage": "consumer", "labels": {"HEALTHY": 1, "DONTCARE": 0, "BLOCKED": 0, "STALLED": 2}, "confirmed_stalls": 1, "mean_stall_s": 0.2, "max_stall_s": 0.2, "limiting_snapshots": 2}],
			 "stalls": [{"stage": "consumer", "seconds": 0.2, "snapshots": 2}], "limiting_stage": "consumer", "evidence": "consumer: busy 99%, lane0 blocked 63%"}]}`,
	}
	page := buildFrom(t, dir, files)
	for _, want := range []string{"Why the limit is where it is", "Trial 2 (close", "Limited by: <b>consumer (consumer: busy 99%, lane0 blocked 63%)</b>",
		"Confirmed stalls: consumer 200ms", `id="fig-diagnosis-2"`, labelColor[1], "rgb(214,39,40)", ">lane0</text>", "TSC relation into receiver0"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, `id="fig-diagnosis-1"`) {
		t.Error("a passing trial without stalls is drawn")
	}
}

// TestServiceRateSection: the stages' estimates of the passing trial at
// the answer, each as a pipeline limit and as answer ÷ limit; an estimate
// that did not converge is shown as such, never as a number.
func TestServiceRateSection(t *testing.T) {
	dir := t.TempDir()
	rate := func(stage, kind, method string, v float64, tuples int) string {
		val, status := "null", "not_converged"
		if v > 0 {
			val, status = strconv.FormatFloat(v, 'f', -1, 64), "converged"
		}
		return fmt.Sprintf(`{"stage": %q, "kind": %q, "method": %q, "tuples_per_s": %s, "status": %q, "converged": %v, "utilisation": 0.9, "tuples": %d}`,
			stage, kind, method, val, status, v > 0, tuples)
	}
	rates := strings.Join([]string{
		rate("receiver0/consumer", "consumer", "raftlib", 0, 1000),
		rate("receiver0/consumer", "consumer", "busy_time", 100e3, 1000),
		rate("receiver0/lane0", "lane", "busy_time", 300e3, 500), // half the traffic: limits at 600 k
		rate("receiver0/lane1", "lane", "busy_time", 300e3, 500),
	}, ",")
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "rates", "topology": "1 sender, 1 receiver",
			"result": {"method": "fast", "last_pass": 90000, "first_fail": 91000, "trials": [
			{"n": 1, "rate": 50000, "achieved": 50000, "purpose": "estimate", "verdict": {"pass": true}, "service_rates": [` + rate("receiver0/consumer", "consumer", "busy_time", 70e3, 1000) + `]},
			{"n": 2, "rate": 90000, "achieved": 90000, "purpose": "ramp", "verdict": {"pass": true}, "service_rates": [` + rates + `]},
			{"n": 3, "rate": 91000, "achieved": 85000, "purpose": "close", "verdict": {"pass": false}}]}}`,
		"config.json": `{"args": ["cpsweep"]}`,
	}
	page := buildFrom(t, dir, files)
	section := page[strings.Index(page, "Service rates against the answer"):]
	for _, want := range []string{"trial 2 (ramp, 90.00 k/s)", "not enough busy time to estimate", "100.0 k/s", "0.90", "600.0 k/s", "0.15"} {
		if !strings.Contains(section, want) {
			t.Errorf("service-rate section lacks %q", want)
		}
	}
	// A stage without an estimate says so in words, never a raw status.
	if strings.Contains(section, "not_converged") {
		t.Errorf("service-rate section shows the raw status not_converged")
	}
	if strings.Contains(section, "70.00 k/s") {
		t.Error("the section shows the estimate trial instead of the trial at the answer")
	}
}

// TestActivityGraphSection: a run with pag.json shows one stacked bar per
// window (a window without a path has none), the run's critical
// participation and the invariants that did not hold.
func TestActivityGraphSection(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"pag.json": `{"run": "x", "window_ns": 100000000, "wait_ns": 15000, "message_delay_ns": 1000000, "workers": ["receiver0/consumer", "sender0/thread0"],
			"windows": [
			{"window": 0, "start_ns": 0, "end_ns": 100000000, "has_path": true, "log_paths": 3,
			 "critical_participation": [{"worker": "receiver0/consumer", "kind": "consume", "value": 0.75}, {"worker": "sender0/thread0", "kind": "send", "value": 0.25}]},
			{"window": 1, "start_ns": 100000000, "end_ns": 200000000, "has_path": false, "log_paths": 0, "critical_participation": []}],
			"critical_participation": [{"worker": "receiver0/consumer", "kind": "consume", "value": 0.75}, {"worker": "sender0/thread0", "kind": "send", "value": 0.25}],
			"violations": [{"invariant": "progress-max", "worker": "receiver0/consumer", "from_ns": 150000000, "to_ns": 350000000, "value_ns": 200000000, "limit_ns": 100000000, "detail": "no progress for 200ms"}],
			"limits": {"progress_max_ns": 100000000, "progress_worker": 0, "window_ns": 100000000},
			"events": 10, "ambiguous_messages": 2}`,
	}
	html := buildFrom(t, dir, files)
	for _, want := range []string{`id="fig-pag"`, "window 0: receiver0/consumer consume 75.0%", "window 0: sender0/thread0 send 25.0%",
		"receiver0/consumer consume</td><td>75.0%", "progress-max 100ms", "150.0 ms", "no progress for 200ms", "2 messages were ambiguous"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "window 1:") {
		t.Error("a bar in a window without a path")
	}
	// A damaged pag.json is a problem on the page, not a failure.
	files["pag.json"] = `{"windows": [`
	if html := buildFrom(t, dir, files); !strings.Contains(html, "pag.json") || strings.Contains(html, `id="fig-pag"`) {
		t.Error("a damaged pag.json is not reported as a problem")
	}
}

// A sweep whose trials contradict its answer is not presented as an answer.
func TestContradictedSweep(t *testing.T) {
	html := buildFrom(t, t.TempDir(), map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "moved", "contradicted": "trial 2 passed at 40.00 k/s, 463% above the first failing rate 7.100 k/s",
			"result": {"method": "fast", "last_pass": 7000, "first_fail": 7100, "trials": [
			{"n": 1, "rate": 20000, "achieved": 20000, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 2, "rate": 40000, "achieved": 40000, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 3, "rate": 7100, "achieved": 5000, "purpose": "hint", "verdict": {"pass": false}},
			{"n": 4, "rate": 7000, "achieved": 7000, "purpose": "confirm", "verdict": {"pass": true}}]}}`,
	})
	if want := "Maximum sustainable throughput: <b>NOT TRUSTWORTHY: trial 2 passed at 40.00 k/s"; !strings.Contains(html, want) {
		t.Errorf("report lacks %q", want)
	}
}

// TestHostsAsTheSweepSaidThem: two agents on one host of 2 CPUs, 75% busy,
// using 0.5 and 0.9 cores: other processes took 5% of it, net of both
// agents, as the sweep's progress line says; the report once printed each
// agent's view, in which the other agent is an "other" (45%), and
// contradicted the line.
func TestHostsAsTheSweepSaidThem(t *testing.T) {
	host := func(node string, cores, others float64) string {
		return fmt.Sprintf(`{"node": %q, "host": "vm", "cpus": 2, "host_busy": 0.75, "host_steal": 0, "process_cores": %g, "other_processes": %g}`, node, cores, others)
	}
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "h", "result": {"method": "fast", "last_pass": 1000000, "trials": [
			{"n": 1, "rate": 1000000, "achieved": 999000, "purpose": "ramp", "verdict": {"pass": true}, "hosts": [` +
			host("receiver0", 0.5, 0.5) + `, ` + host("sender0", 0.9, 0.3) + `]}]}}`,
	}
	page := buildFrom(t, t.TempDir(), files)
	if !strings.Contains(page, "vm busy 75% of 2 CPUs, steal 0.0%, other processes 5%; receiver0 0.50 cores; sender0 0.90 cores") || strings.Contains(page, "others 50%") {
		t.Errorf("the report's hosts are not the sweep's line")
	}
}

// TestHeadlineSaysLatencyAndLimit: the headline carries the latency at
// the answer and what limited it, as the sweep printed them; a trial
// limited by the host's CPUs says why its stage table reads healthy.
func TestHeadlineSaysLatencyAndLimit(t *testing.T) {
	snaps := `{"t_unix_ns": 1100000000, "labels": ["HEALTHY", "HEALTHY"], "ranks": [0, 1]},
		{"t_unix_ns": 1200000000, "labels": ["HEALTHY", "HEALTHY"], "ranks": [0, 1]}`
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "h", "limiting_stage": "host CPU", "limiting_evidence": "host busy 97% of 2 CPUs",
			"latency": {"rate": 1000, "runs": 3, "p50_ns": 1805000, "p99_ns": 21500000, "clock_bound_ns": 0, "clock": "one machine"},
			"result": {"method": "fast", "last_pass": 1000, "first_fail": 1100, "trials": [
			{"n": 1, "rate": 1000, "achieved": 1000, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 2, "rate": 1100, "achieved": 900, "purpose": "close", "verdict": {"pass": false}}]}}`,
		"diagnosis.json": `{"format_version": 1, "confirm": 2, "period_ns": 100000000, "trials": [
			{"n": 2, "rate": 1100, "purpose": "close", "pass": false, "period_ns": 100000000, "confirm": 2, "aligned": "one process",
			 "modules": [{"name": "lane0"}, {"name": "consumer"}], "snapshots": [` + snaps + `], "summary": [], "stalls": [],
			 "limiting_stage": "host CPU", "evidence": "host busy 97% of 2 CPUs"}]}`,
	}
	page := buildFrom(t, t.TempDir(), files)
	head := page[strings.Index(page, `class="verdict"`):]
	head = head[:strings.Index(head, "</div></div>")]
	for _, want := range []string{"p50 1.805 ms, p99 21.50 ms", "limited by: host CPU (host busy 97% of 2 CPUs)"} {
		if !strings.Contains(head, want) {
			t.Errorf("headline lacks %q: %s", want, head)
		}
	}
	if !strings.Contains(page, "neither busy nor blocked in its own accounting") {
		t.Error("the host-CPU trial's section does not say why its stages read healthy")
	}
}

// TestDistributionAtTheAnswer: every receiver's latency distribution in
// the runs at the answer is drawn on the percentile axis and written as
// .hgrm beside the page; a run below the answer, or a distribution that
// fails its check, is not.
func TestDistributionAtTheAnswer(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "trials"), 0o755); err != nil {
		t.Fatal(err)
	}
	dist := `{"brackets": [{"percentile": 0, "value_ns": 1000, "count": 1}, {"percentile": 50, "value_ns": 2000, "count": 50},
		{"percentile": 90, "value_ns": 5000, "count": 90}, {"percentile": 99, "value_ns": 9000, "count": 99}, {"percentile": 100, "value_ns": 12000, "count": 100}],
		"count": 100, "mean_ns": 2500, "stddev_ns": 1000, "max_ns": 12000}`
	bad := `{"brackets": [{"percentile": 50, "value_ns": 2000, "count": 50}, {"percentile": 40, "value_ns": 1000, "count": 60}], "count": 60}`
	files := map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "d", "result": {"method": "fast", "last_pass": 1000, "first_fail": 1100, "trials": [
			{"n": 1, "rate": 500, "achieved": 500, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 2, "rate": 1000, "achieved": 1000, "purpose": "ramp", "verdict": {"pass": true}},
			{"n": 3, "rate": 1000, "achieved": 1000, "purpose": "repeat", "verdict": {"pass": true}}]}}`,
		"trials/001.json": `{"trial": {"n": 1}, "outcome": {"receivers": [{"latency_distribution": ` + dist + `}]}}`,
		"trials/002.json": `{"trial": {"n": 2}, "outcome": {"receivers": [{"latency_distribution": ` + dist + `}, {"latency_distribution": ` + bad + `}]}}`,
		"trials/003.json": `{"trial": {"n": 3}, "outcome": {"receivers": [{"latency_distribution": ` + dist + `}]}}`,
	}
	page := buildFrom(t, dir, files)
	for _, want := range []string{`id="fig-distribution"`, "latency-at-answer-trial002-receiver0.hgrm", "latency-at-answer-trial003-receiver0.hgrm", "trial 2 receiver1: latency distribution bracket 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "trial001") {
		t.Error("a run below the answer is drawn")
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Write(d, true); err != nil {
		t.Fatal(err)
	}
	hgrm, err := os.ReadFile(filepath.Join(dir, "latency-at-answer-trial002-receiver0.hgrm"))
	if err != nil || !strings.Contains(string(hgrm), "       0.009 0.990000000000") || !strings.Contains(string(hgrm), "Total count") {
		t.Fatalf("hgrm %v:\n%s", err, hgrm)
	}
}

// A trial file without an outcome (damaged, or written by another tool)
// leaves its row's figures empty; it never stops the page.
func TestTrialFileWithoutOutcome(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "trials"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := buildFrom(t, dir, map[string]string{
		rundir.FormatFile: `{"format": "cloudprofiler-go run directory", "version": 2}`,
		"summary.json": `{"format_version": 2, "name": "o", "result": {"method": "fast", "last_pass": 1000, "first_fail": 1100, "trials": [
			{"n": 1, "rate": 1000, "achieved": 1000, "purpose": "ramp", "verdict": {"pass": true}}]}}`,
		"trials/001.json": `{"trial": {"n": 1}, "outcome": null}`,
	})
	if !strings.Contains(page, "<td>1</td>") {
		t.Error("the trial's row is missing")
	}
}

func TestPercentileTicks(t *testing.T) {
	var got []string
	for _, tk := range (percentileTicks{}).Ticks(-0.1, 5.2) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, " ") != "0% 90% 99% 99.9% 99.99% 99.999%" {
		t.Fatalf("ticks %q", got)
	}
}
