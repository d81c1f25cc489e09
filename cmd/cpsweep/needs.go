package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// need is a rule of the sweep's flags: flags that take effect only when
// holds, and what to write for it.
type need struct {
	flags []string
	holds func(f *pflag.FlagSet) bool
	needs string
}

// flagNeeds are the sweep's flags that have no effect without another:
// each is refused rather than ignored (trial 1 at 500 k/s after --from 2k
// read as a linear search, with --search left out).
var flagNeeds = []need{
	{[]string{"from", "to", "step"}, searchIs("linear"), "--search linear"},
	{[]string{"start", "max-rate", "min-rate", "factor", "precision", "boundary-runs", "max-trials", "hint"}, searchIs("fast"), "the fast search (leave out --search linear)"},
	{[]string{"profile-at", "profile-rate", "profile-search"}, given("profile"), "--profile handlers.yaml"},
	{[]string{"lanes", "local-senders", "sut"}, local, "local agents (leave out --sender/--receiver and --senders-from)"},
	{[]string{"job-quiet", "catch-up"}, given("input"), "a job as the system under test (--input and --output)"},
	{[]string{"sender-count"}, given("senders-from"), "--senders-from"},
	{[]string{"receiver-count"}, given("receivers-from"), "--receivers-from"},
	{[]string{"job-count"}, given("jobs-from"), "--jobs-from"},
	{[]string{"dns-server", "discover-timeout"}, anyGiven("senders-from", "jobs-from"), "--senders-from or --jobs-from"},
	{[]string{"yes"}, given("plan"), "--plan (or cpsweep rerun)"},
	{[]string{"disturbed-backoff", "max-repeats"}, hostRulesOn, "a host rule (--max-others, --max-steal or --max-wait above 0)"},
}

func searchIs(method string) func(*pflag.FlagSet) bool {
	return func(f *pflag.FlagSet) bool {
		m, _ := f.GetString("search")
		return m == method || method == "fast" && m == ""
	}
}

func given(name string) func(*pflag.FlagSet) bool {
	return func(f *pflag.FlagSet) bool {
		fl := f.Lookup(name)
		return fl != nil && fl.Changed && fl.Value.String() != "" && fl.Value.String() != "[]"
	}
}

func anyGiven(names ...string) func(*pflag.FlagSet) bool {
	return func(f *pflag.FlagSet) bool {
		for _, n := range names {
			if given(n)(f) {
				return true
			}
		}
		return false
	}
}

func local(f *pflag.FlagSet) bool {
	return !anyGiven("sender", "receiver", "senders-from", "receivers-from")(f)
}

func hostRulesOn(f *pflag.FlagSet) bool {
	for _, n := range []string{"max-others", "max-steal", "max-wait"} {
		if v, err := f.GetFloat64(n); err == nil && v > 0 {
			return true
		}
	}
	return false
}

// checkNeeds refuses every flag given on the command line that has no
// effect with the others: a flag is never ignored in silence. A plan
// file's setting (fromPlan) that has none is not refused (a plan for the
// fast search, swept linearly by a flag beside it), but said: unused.
func checkNeeds(f *pflag.FlagSet, fromPlan []string) (unused string, err error) {
	var problems, notes []string
	for _, n := range flagNeeds {
		if n.holds(f) {
			continue
		}
		var set, planned []string
		for _, name := range n.flags {
			switch fl := f.Lookup(name); {
			case fl == nil || !fl.Changed:
			case slices.Contains(fromPlan, name):
				planned = append(planned, name)
			default:
				set = append(set, "--"+name)
			}
		}
		if len(set) > 0 {
			problems = append(problems, fmt.Sprintf("%s %s effect only with %s", strings.Join(set, ", "), takes(len(set)), n.needs))
		}
		if len(planned) > 0 {
			notes = append(notes, fmt.Sprintf("the plan's %s %s no effect without %s", strings.Join(planned, ", "), has(len(planned)), n.needs))
		}
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%s: give what they need, or leave them out", strings.Join(problems, "; "))
	}
	return strings.Join(notes, "; "), nil
}

func takes(n int) string {
	if n == 1 {
		return "takes"
	}
	return "take"
}

func has(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
