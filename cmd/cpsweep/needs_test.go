package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestNoFlagIsIgnored: a flag that takes no effect with the others given
// is refused, naming what it needs; with what it needs, it passes; the
// flags of a plain sweep pass as they are.
func TestNoFlagIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string // "" = accepted
	}{
		{[]string{"--duration", "3s", "--bucket", "100"}, ""},
		{[]string{"--from", "2k", "--to", "20k", "--step", "2k"}, "--from, --to, --step take effect only with --search linear"},
		{[]string{"--search", "linear", "--from", "2k", "--to", "20k", "--step", "2k"}, ""},
		{[]string{"--search", "linear", "--from", "2k", "--max-trials", "5"}, "--max-trials takes effect only with the fast search"},
		{[]string{"--start", "1k", "--precision", "0.05", "--max-trials", "12"}, ""},
		{[]string{"--profile-at", "0.5"}, "--profile-at takes effect only with --profile"},
		{[]string{"--profile", "h.yaml", "--profile-at", "0.5"}, ""},
		{[]string{"--sender", "a:1", "--receiver", "b:2", "--lanes", "2"}, "--lanes takes effect only with local agents"},
		{[]string{"--lanes", "2", "--local-senders", "2"}, ""},
		{[]string{"--job-quiet", "2s"}, "--job-quiet takes effect only with a job"},
		{[]string{"--sender-count", "2"}, "--sender-count takes effect only with --senders-from"},
		{[]string{"--dns-server", "127.0.0.1:53"}, "--dns-server takes effect only with --senders-from or --jobs-from"},
		{[]string{"--yes"}, "--yes takes effect only with --plan"},
		{[]string{"--max-others", "0", "--max-steal", "0", "--max-wait", "0", "--max-repeats", "3"}, "--max-repeats takes effect only with a host rule"},
		{[]string{"--max-others", "0", "--max-steal", "0"}, ""},
	} {
		o := new(options)
		f := pflag.NewFlagSet("cpsweep", pflag.ContinueOnError)
		o.register(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		_, err := checkNeeds(f, nil)
		if tc.says == "" && err != nil || tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.says)
		}
	}
}

// TestEveryFlagIsARuleOrAlwaysTakesEffect: each of the sweep's flags is
// in a rule of flagNeeds or in the list of flags that take effect in
// every mode, so that a flag added later is placed on purpose.
func TestEveryFlagIsARuleOrAlwaysTakesEffect(t *testing.T) {
	always := map[string]bool{}
	for _, n := range strings.Fields(`plan profile sender receiver job-metrics job-metrics-map job-agent senders-from receivers-from
		jobs-from relay-input token token-file search duration warmup threads bucket scenario events events-time events-key shape
		overflow idle schema drain work stall decode-work send-work stage-period work-schedule ring end-timeout lateness-budgets
		lateness-floor backlog-growth latency-p99 expect-min-rate expect-p99 sut-process input output expect-filter expect-window
		results name json verbose agent-timeout max-others max-steal max-wait retry-agent clock`) {
		always[n] = true
	}
	ruled := map[string]bool{}
	for _, n := range flagNeeds {
		for _, f := range n.flags {
			ruled[f] = true
		}
	}
	o := new(options)
	f := pflag.NewFlagSet("cpsweep", pflag.ContinueOnError)
	o.register(f)
	f.VisitAll(func(fl *pflag.Flag) {
		if !always[fl.Name] && !ruled[fl.Name] {
			t.Errorf("--%s is neither in a rule of flagNeeds nor among the flags that always take effect", fl.Name)
		}
		if always[fl.Name] && ruled[fl.Name] {
			t.Errorf("--%s is both", fl.Name)
		}
	})
}

// TestAPlansUnusedSettingIsSaidNotRefused: a plan for the fast search
// swept linearly by flags beside it names its unused settings in a note.
func TestAPlansUnusedSettingIsSaidNotRefused(t *testing.T) {
	o := new(options)
	f := pflag.NewFlagSet("cpsweep", pflag.ContinueOnError)
	o.register(f)
	if err := f.Parse([]string{"--search", "linear", "--from", "5k", "--to", "10k", "--step", "5k", "--start", "20k", "--max-trials", "12"}); err != nil {
		t.Fatal(err)
	}
	unused, err := checkNeeds(f, []string{"start", "max-trials"})
	if err != nil || unused != "the plan's start, max-trials have no effect without the fast search (leave out --search linear)" {
		t.Errorf("%q, %v", unused, err)
	}
	if _, err := checkNeeds(f, []string{"start"}); err == nil || !strings.Contains(err.Error(), "--max-trials takes effect only with the fast search") {
		t.Errorf("a flag of the command line's: %v", err)
	}
}
