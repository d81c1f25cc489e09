package main

import (
	"fmt"
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

// checkNeeds refuses every flag given that has no effect with the others:
// a flag is never ignored in silence.
func checkNeeds(f *pflag.FlagSet) error {
	var problems []string
	for _, n := range flagNeeds {
		if n.holds(f) {
			continue
		}
		var set []string
		for _, name := range n.flags {
			if fl := f.Lookup(name); fl != nil && fl.Changed {
				set = append(set, "--"+name)
			}
		}
		switch len(set) {
		case 0:
		case 1:
			problems = append(problems, fmt.Sprintf("%s takes effect only with %s", set[0], n.needs))
		default:
			problems = append(problems, fmt.Sprintf("%s take effect only with %s", strings.Join(set, ", "), n.needs))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: give what they need, or leave them out", strings.Join(problems, "; "))
	}
	return nil
}
