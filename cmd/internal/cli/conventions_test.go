package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/spf13/cobra"
)

// tree is a small command tree like cpsweep's: a root that runs, a
// group (deploy) with one subcommand, and a leaf with a flag.
func tree(ran *string) *cobra.Command {
	root := &cobra.Command{Use: "tool", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { *ran = "tool"; return nil }}
	root.Flags().String("duration", "", "")
	group := &cobra.Command{Use: "deploy"}
	group.AddCommand(&cobra.Command{Use: "kubernetes [-- sweep flags]", RunE: func(*cobra.Command, []string) error { *ran = "kubernetes"; return nil }})
	leaf := &cobra.Command{Use: "analyze RUN", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { *ran = "analyze"; return nil }}
	leaf.Flags().Bool("pag", false, "")
	failing := &cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error { return errors.New("the run directory could not be written") }}
	root.AddCommand(group, leaf, failing)
	Conventions(root, func(c *cobra.Command, err error) string {
		if f := FlagNamed(root.Flags(), err); f != nil && c != root {
			return "--" + f.Name + " belongs after --"
		}
		return ""
	})
	return root
}

func TestConventions(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		ran      string
		contains []string // in what is printed, in order
	}{
		{[]string{}, 0, "tool", nil},
		{[]string{"analyze", "run1"}, 0, "analyze", nil},
		{[]string{"deploy", "kubernetes"}, 0, "kubernetes", nil},
		{[]string{"analyse", "run1"}, ExitUsage, "", []string{`unknown command "analyse" for "tool"; did you mean analyze?`, "Run 'tool --help' for usage."}},
		{[]string{"deploy", "kubernets"}, ExitUsage, "", []string{`unknown command "kubernets" for "tool deploy"; did you mean kubernetes?`, "Run 'tool deploy --help' for usage."}},
		{[]string{"deploy"}, ExitUsage, "", []string{"tool deploy needs a subcommand: kubernetes", "Run 'tool deploy --help'"}},
		{[]string{"deploy", "zzz"}, ExitUsage, "", []string{`unknown command "zzz" for "tool deploy"; its subcommands are kubernetes`}},
		{[]string{"--bogus"}, ExitUsage, "", []string{"unknown flag: --bogus", "Run 'tool --help' for usage."}},
		{[]string{"deploy", "kubernetes", "--duration", "2s"}, ExitUsage, "", []string{"unknown flag: --duration; --duration belongs after --", "Run 'tool deploy kubernetes --help'"}},
		{[]string{"analyze"}, ExitUsage, "", []string{"accepts 1 arg(s), received 0", "Run 'tool analyze --help'"}},
		{[]string{"fail"}, 9, "", []string{"Error: the run directory could not be written"}},
	} {
		var ran string
		root := tree(&ran)
		root.SetArgs(tc.args)
		var out bytes.Buffer
		root.SetOut(&out)
		code := 0
		got := Execute(context.Background(), root, &out, &code, 9)
		if got != tc.code || ran != tc.ran {
			t.Errorf("%q: exit %d, ran %q; want %d, %q\n%s", tc.args, got, ran, tc.code, tc.ran, out.String())
		}
		text := out.String()
		for _, c := range tc.contains {
			i := strings.Index(text, c)
			if i < 0 {
				t.Errorf("%q: %q not in\n%s", tc.args, c, text)
				continue
			}
			text = text[i+len(c):]
		}
		// One error and one pointer: never the usage below it.
		if tc.code == ExitUsage && (strings.Count(out.String(), "\n") != 2 || strings.Contains(out.String(), "Flags:")) {
			t.Errorf("%q: a usage error prints two lines, got\n%s", tc.args, out.String())
		}
		if tc.code == 9 && strings.Contains(out.String(), "--help") {
			t.Errorf("%q: a failure that is not a usage error points to --help:\n%s", tc.args, out.String())
		}
	}
}

func TestVersionNamesTheBuild(t *testing.T) {
	v := Version()
	// A test binary carries no VCS stamp; the binaries' own --version is
	// checked end to end (the commit of the checkout).
	if !strings.Contains(v, "go1.") || !strings.Contains(v, "commit") {
		t.Fatalf("version %q", v)
	}
}

// cpsweep's "invalid plan, nothing ran" is the usage status of all three.
func TestOneUsageStatus(t *testing.T) {
	if ExitUsage != sweep.ExitInvalidPlan {
		t.Fatalf("usage errors exit %d, cpsweep's invalid plan %d", ExitUsage, sweep.ExitInvalidPlan)
	}
}
