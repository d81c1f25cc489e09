package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// planSettings are the values planFlags binds.
type planSettings struct {
	d     time.Duration
	n     int
	s     string
	b     bool
	rate  float64
	list  []string
	token string
}

// planFlags are a few flags of each kind a sweep has.
func planFlags() (*pflag.FlagSet, *planSettings) {
	v := &planSettings{}
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.DurationVar(&v.d, "duration", 3*time.Second, "")
	f.IntVar(&v.n, "threads", 1, "")
	f.StringVar(&v.s, "expect-filter", "", "")
	f.BoolVar(&v.b, "clock", false, "")
	RateVar(f, &v.rate, "start", "")
	f.StringArrayVar(&v.list, "sender", nil, "")
	f.StringVar(&v.token, "token", "", "")
	f.String("plan", "", "")
	return f, v
}

func writePlan(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A plan sets the flags through their own parsers; the command line wins.
func TestApplyPlan(t *testing.T) {
	f, v := planFlags()
	if err := f.Parse([]string{"--threads", "4"}); err != nil {
		t.Fatal(err)
	}
	p := writePlan(t, "duration: 2s\nthreads: 2\nexpect-filter: 'event_type == view'\nclock: true\nstart: 1.5M\nsender:\n  - a:1\n  - b:2\n")
	if _, err := ApplyPlan(f, p, "plan", "token"); err != nil {
		t.Fatal(err)
	}
	if v.d != 2*time.Second || v.n != 4 || v.s != "event_type == view" || !v.b || v.rate != 1.5e6 || strings.Join(v.list, ",") != "a:1,b:2" {
		t.Fatalf("applied: %+v", v)
	}
}

// Every bad plan is refused with the line and the setting named, as a
// bad flag is.
func TestApplyPlanRefuses(t *testing.T) {
	for _, tc := range []struct{ body, says string }{
		{"duration: 2x\n", `line 1: duration: invalid argument "2x"`},
		{"threads: 2\ndurations: 2s\n", `line 2: unknown setting "durations"`},
		{"token: secret\n", `"token" has no place in a plan file`},
		{"plan: other.yaml\n", `"plan" has no place in a plan file`},
		{"threads: [1, 2]\n", "threads takes one value, not a list"},
		{"threads: 2\nthreads: 3\n", `"threads" is set twice`},
		{"sender: {a: 1}\n", "not a mapping"},
		{"- a\n- b\n", "not a mapping of settings"},
		{"", "is empty"},
		{"start: fast\n", "line 1: start"},
		{"API_KEY: s3cret-value\n", "line 1: not a setting"},
	} {
		f, _ := planFlags()
		_, err := ApplyPlan(f, writePlan(t, tc.body), "plan", "token")
		if err == nil || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.says)
		}
	}
}

// TestPlanReach: the settings a plan sets that name files, directories
// and hosts are listed, with the path each reads; a setting given on the
// command line is the user's own and is not; an answer is asked for
// unless --yes was given, and with no terminal it is a refusal.
func TestPlanReach(t *testing.T) {
	f, _ := planFlags()
	f.String("events", "", "")
	f.String("results", "runs", "")
	MarkReach(f, ReachReads, "events")
	MarkReach(f, ReachWrites, "results")
	MarkReach(f, ReachContacts, "sender")
	if err := f.Parse([]string{"--threads", "2"}); err != nil {
		t.Fatal(err)
	}
	set, err := ApplyPlan(f, writePlan(t, "events: ~/customers.jsonl\nresults: /\nsender: [evil.example:9101]\nthreads: 4\nduration: 2s\n"), "plan", "token")
	if err != nil {
		t.Fatal(err)
	}
	r := PlanReach(f, set, nil)
	cwd, _ := os.Getwd()
	if len(r.Reads) != 1 || r.Reads[0] != "events: ~/customers.jsonl ("+filepath.Join(cwd, "~/customers.jsonl")+")" ||
		len(r.Writes) != 1 || r.Writes[0] != "results: /" || len(r.Contacts) != 1 || r.Contacts[0] != "sender: evil.example:9101" {
		t.Fatalf("reach %+v", r)
	}
	var b strings.Builder
	r.Write(&b)
	for _, want := range []string{"reads these files", "customers.jsonl", "writes its run directory in", "contacts these hosts", "evil.example"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("listing lacks %q:\n%s", want, b.String())
		}
	}
	if err := Confirm(nil, &b, true, "the plan"); err != nil {
		t.Errorf("--yes: %v", err)
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	if err := Confirm(devnull, &b, false, "the plan"); err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("no terminal: %v", err)
	}
	f2, _ := planFlags()
	MarkReach(f2, ReachContacts, "sender")
	set, _ = ApplyPlan(f2, writePlan(t, "threads: 4\nduration: 2s\n"), "plan", "token")
	if r := PlanReach(f2, set, nil); !r.Empty() {
		t.Errorf("a plan of values reaches %+v", r)
	}
}

// What PlanOf writes, ApplyPlan reads back to the same settings, values
// YAML would misread included; the skipped settings stay out.
func TestPlanRoundTrip(t *testing.T) {
	f, _ := planFlags()
	args := []string{"--duration", "1m30s", "--expect-filter", "kind: a # b", "--clock", "--start", "250k", "--sender", "yes", "--sender", "", "--token", "s3cret"}
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	b := PlanOf(f, "a header\nof two lines", "plan", "token")
	if strings.Contains(string(b), "s3cret") || !strings.HasPrefix(string(b), "# a header\n# of two lines\n") {
		t.Fatalf("plan:\n%s", b)
	}
	// plain where YAML reads the text back, quoted where it would not
	for _, want := range []string{"duration: 1m30s\n", "start: 250k\n", "clock: true\n", "  - yes\n", `expect-filter: "kind: a # b"` + "\n", `  - ""` + "\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("plan lacks %q:\n%s", want, b)
		}
	}
	g, v := planFlags()
	if _, err := ApplyPlan(g, writePlan(t, string(b)), "plan", "token"); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if v.d != 90*time.Second || v.s != "kind: a # b" || !v.b || v.rate != 250e3 || len(v.list) != 2 || v.list[0] != "yes" || v.list[1] != "" || v.token != "" {
		t.Fatalf("read back %+v from:\n%s", v, b)
	}
	again := PlanOf(g, "a header\nof two lines", "plan", "token")
	if string(again) != string(b) {
		t.Errorf("not the same plan twice:\n%s\n%s", b, again)
	}
}
