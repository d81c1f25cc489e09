package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// What a setting makes a command do outside itself: the annotation that
// MarkReach puts on a flag, read back by PlanReach.
const (
	ReachReads    = "reads"    // a file of the user's (a path)
	ReachWrites   = "writes"   // a directory it writes in
	ReachContacts = "contacts" // a host, an agent or a broker (an address or URL)
)

const reachAnnotation = "cp-reach"

// MarkReach says of the flags names that their values are files read,
// directories written or hosts contacted (ReachReads, ...), so that a plan
// file setting them is shown before it is used.
func MarkReach(f *pflag.FlagSet, kind string, names ...string) {
	for _, n := range names {
		if err := f.SetAnnotation(n, reachAnnotation, []string{kind}); err != nil {
			panic(fmt.Sprintf("MarkReach %s: %v", n, err)) // a programming error: the flag is registered beside it
		}
	}
}

// ReachOf is the kind MarkReach gave a flag ("" when none).
func ReachOf(fl *pflag.Flag) string {
	if k := fl.Annotations[reachAnnotation]; len(k) == 1 {
		return k[0]
	}
	return ""
}

// Reach is what the settings of a plan file make a command read, write and
// contact, each as "setting: value".
type Reach struct {
	Reads, Writes, Contacts []string
}

// Empty says whether the plan reaches nothing outside the command.
func (r Reach) Empty() bool { return len(r.Reads)+len(r.Writes)+len(r.Contacts) == 0 }

// PlanReach lists the files, directories and hosts that the settings
// named set (those a plan file set: ApplyPlan's answer) reach. fileOf,
// when not nil, says which file a ReachReads setting's value reads ("":
// none, e.g. a built-in scenario's name); without it the value is the
// file.
func PlanReach(f *pflag.FlagSet, set []string, fileOf func(name, value string) string) Reach {
	var r Reach
	for _, name := range set {
		fl := f.Lookup(name)
		if fl == nil {
			continue
		}
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if v == "" {
				continue
			}
			line := fmt.Sprintf("%s: %s", name, v)
			switch ReachOf(fl) {
			case ReachReads:
				if fileOf != nil {
					if v = fileOf(name, v); v == "" {
						continue
					}
					line = fmt.Sprintf("%s: %s", name, v)
				}
				if abs, err := filepath.Abs(v); err == nil && abs != v {
					line += " (" + abs + ")"
				}
				r.Reads = append(r.Reads, line)
			case ReachWrites:
				if abs, err := filepath.Abs(v); err == nil && abs != v {
					line += " (" + abs + ")"
				}
				r.Writes = append(r.Writes, line)
			case ReachContacts:
				r.Contacts = append(r.Contacts, line)
			}
		}
	}
	return r
}

// Write lists the reach for a person, every value escaped.
func (r Reach) Write(w io.Writer) {
	for _, g := range []struct {
		head  string
		lines []string
	}{
		{"reads these files of yours", r.Reads},
		{"writes its run directory in", r.Writes},
		{"contacts these hosts, agents and brokers", r.Contacts},
	} {
		if len(g.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "  it %s:\n", g.head)
		for _, l := range g.lines {
			fmt.Fprintf(w, "    %s\n", termsafe.Escape(l))
		}
	}
}

// ErrNotConfirmed is the answer of Confirm when nobody said yes.
type ErrNotConfirmed struct{ Why string }

func (e *ErrNotConfirmed) Error() string { return e.Why }

// Confirm goes on when yes was given, or when a person at the terminal in
// answers y; with no terminal and no yes it refuses, saying how to go on.
// what names what is asked about ("the plan of runs/x").
func Confirm(in *os.File, out io.Writer, yes bool, what string) error {
	if yes {
		return nil
	}
	if in == nil || !IsTerminal(in) {
		return &ErrNotConfirmed{Why: fmt.Sprintf("%s (shown above) goes on only when confirmed: nothing was read or sent; "+
			"give --yes to go on (there is no terminal to ask on)", what)}
	}
	fmt.Fprintf(out, "go on with %s? [y/N] ", what)
	line, _ := bufio.NewReader(io.LimitReader(in, 256)).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
		return nil
	}
	return &ErrNotConfirmed{Why: fmt.Sprintf("%s: not confirmed; nothing was read or sent", what)}
}
