package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ExitUsage is the exit status of a usage error (a bad flag, an unknown
// subcommand, a missing or extra argument) in all three binaries; it is
// cpsweep's "invalid plan, nothing ran" too.
const ExitUsage = 4

// UsageError is an error in how a command was called: it prints with one
// line pointing to --help and exits ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage marks err as a usage error (nil stays nil).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	var u *UsageError
	if errors.As(err, &u) {
		return err
	}
	return &UsageError{Err: err}
}

// Conventions applies the command-line conventions to root and all its
// subcommands: a usage error prints the error and one line pointing to
// --help (never the whole usage); an unknown subcommand is a usage error
// with "did you mean"; a command that only groups others, run without
// one, names them and fails; --version prints the commit. flagHint, if
// set, may add a hint to a flag error of a command (cpsweep: a sweep
// flag given before "--").
func Conventions(root *cobra.Command, flagHint func(c *cobra.Command, err error) string) {
	root.Version = Version()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SilenceErrors = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if flagHint != nil {
			if h := flagHint(c, err); h != "" {
				err = fmt.Errorf("%w; %s", err, h)
			}
		}
		return Usage(err)
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SilenceUsage = true
		c.SuggestionsMinimumDistance = 2
		switch {
		case c.HasSubCommands() && c.Run == nil && c.RunE == nil:
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				return Usage(unknownCommand(c, args))
			}
		case c.HasSubCommands():
			orig := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				if len(args) > 0 && orig != nil && orig(c, args) != nil {
					return Usage(unknownCommand(c, args))
				}
				return wrapArgs(orig)(c, args)
			}
		default:
			c.Args = wrapArgs(c.Args)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func wrapArgs(orig cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if orig == nil {
			return nil
		}
		return Usage(orig(c, args))
	}
}

// unknownCommand names what c expects, with the nearest subcommands.
func unknownCommand(c *cobra.Command, args []string) error {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("%s needs a subcommand: %s", c.CommandPath(), strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		return fmt.Errorf("%s; did you mean %s?", msg, strings.Join(s, " or "))
	}
	return fmt.Errorf("%s; its subcommands are %s", msg, strings.Join(names, ", "))
}

// Execute runs root and returns the exit status: *code as the command
// left it when it succeeded; ExitUsage after a usage error; *code, or
// failed when the command left it 0, after any other error. Every error
// is printed to errOut, a usage error with one line pointing to --help.
func Execute(ctx context.Context, root *cobra.Command, errOut io.Writer, code *int, failed int) int {
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return *code
	}
	fmt.Fprintf(errOut, "Error: %v\n", err)
	var u *UsageError
	if errors.As(err, &u) {
		if c == nil {
			c = root
		}
		fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", c.CommandPath())
		return ExitUsage
	}
	if *code != 0 {
		return *code
	}
	return failed
}

// commit is the commit make build stamps in (-ldflags -X, with
// "+modified" when the tree had changes) for the builds the go command
// leaves unstamped: a git worktree, or GOFLAGS=-buildvcs=false. It is set
// by the linker and never written at run time.
var commit string

// Version is this build's version: the module version when it has one,
// and the commit it was built from (with "+modified" when the tree had
// changes), from the build information the go command records, else from
// what make build stamped.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	var rev, modified, at string
	if commit != "" {
		var dirty bool
		if rev, dirty = strings.CutSuffix(commit, "+modified"); dirty {
			modified = "+modified"
		}
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		case "vcs.time":
			at = s.Value
		}
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	if rev == "" {
		return v + ", commit unknown (built without version control information), " + info.GoVersion
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := fmt.Sprintf("commit %s%s", rev, modified)
	if v != "(devel)" && !strings.Contains(v, rev) { // a release, not a pseudo-version of the commit
		out = v + ", " + out
	}
	if at != "" {
		out += " of " + at
	}
	return out + ", " + info.GoVersion
}

// FlagNamed returns the flag an "unknown flag" error names (nil: none or
// not one of fs's), for a hint of where the flag belongs.
func FlagNamed(fs *pflag.FlagSet, err error) *pflag.Flag {
	msg := err.Error()
	const prefix = "unknown flag: --"
	if !strings.HasPrefix(msg, prefix) {
		return nil
	}
	return fs.Lookup(strings.TrimSpace(strings.TrimPrefix(msg, prefix)))
}
