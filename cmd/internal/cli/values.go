package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cloudprofiler-go/cp/scenarios"

	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/inject"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/internal/osthread"
)

// CPUChoice is a --cpus flag: "auto", "none" or a list like "0,2-3",
// checked when the flag is read; Resolve turns it into CPUs once the
// number of threads is known.
type CPUChoice struct{ spec string }

// CPUChoiceVar defines a CPU choice flag with a default.
func CPUChoiceVar(f *pflag.FlagSet, p *CPUChoice, name, def, usage string) {
	p.spec = def
	f.Var(p, name, usage)
}

// Set implements pflag.Value.
func (c *CPUChoice) Set(s string) error {
	if s != "auto" && s != "none" {
		if _, err := osthread.Parse(s); err != nil {
			return err
		}
	}
	c.spec = s
	return nil
}

func (c *CPUChoice) String() string { return c.spec }

// Type implements pflag.Value.
func (c *CPUChoice) Type() string { return "cpus" }

// Resolve is CPUs for this choice and n threads.
func (c *CPUChoice) Resolve(n int) ([]int, error) { return CPUs(c.spec, n) }

// ShapeValue is a rate shape flag (see sender.ParseShape), parsed when the
// flag is read into the scenarios.Shape it configures.
type ShapeValue struct {
	shape *scenarios.Shape
	spec  string
}

// ShapeVar defines a shape flag bound to p, with a default spec.
func ShapeVar(f *pflag.FlagSet, p *scenarios.Shape, name, def, usage string) {
	v := &ShapeValue{shape: p}
	if err := v.Set(def); err != nil {
		panic("default shape " + def + ": " + err.Error()) // a programming error, not user input
	}
	f.Var(v, name, usage)
}

// Set implements pflag.Value.
func (v *ShapeValue) Set(s string) error {
	sh, err := scenarios.ParseShape(s)
	if err != nil {
		return err
	}
	*v.shape, v.spec = sh, s
	return nil
}

func (v *ShapeValue) String() string { return v.spec }

// Type implements pflag.Value.
func (v *ShapeValue) Type() string { return "shape" }

// TokenFlags are --token and --token-file.
type TokenFlags struct{ Token, File string }

// Register adds the two flags; usage says who expects the token.
func (t *TokenFlags) Register(f *pflag.FlagSet, usage string) {
	f.StringVar(&t.Token, "token", "", usage)
	f.StringVar(&t.File, "token-file", "", "read the token from this file (see --token)")
}

// Read returns the token ("" when none was given).
func (t *TokenFlags) Read() (string, error) { return httpapi.ReadToken(t.Token, t.File) }

// Server returns the token a server on addr requires; off loopback, one
// must be given.
func (t *TokenFlags) Server(addr string) (string, error) {
	return httpapi.ServerToken(t.Token, t.File, addr)
}

// stallsValue is a repeatable --stall flag, each parsed when read.
type stallsValue struct{ p *[]inject.Stall }

// StallsVar defines a repeatable stall flag (inject.ParseStall) appending
// to p.
func StallsVar(f *pflag.FlagSet, p *[]inject.Stall, name, usage string) {
	f.Var(stallsValue{p}, name, usage)
}

func (v stallsValue) Set(s string) error {
	st, err := inject.ParseStall(s)
	if err != nil {
		return err
	}
	*v.p = append(*v.p, st)
	return nil
}

func (v stallsValue) String() string {
	if v.p == nil {
		return ""
	}
	var parts []string
	for _, s := range *v.p {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " ")
}

func (v stallsValue) Type() string { return "stage@start+length" }

// Append, Replace and GetSlice make the flag a list (pflag.SliceValue):
// a plan file gives its stalls as one.
func (v stallsValue) Append(s string) error { return v.Set(s) }

func (v stallsValue) Replace(list []string) error {
	*v.p = nil
	for _, s := range list {
		if err := v.Set(s); err != nil {
			return err
		}
	}
	return nil
}

func (v stallsValue) GetSlice() []string {
	var out []string
	for _, s := range *v.p {
		out = append(out, s.String())
	}
	return out
}

// scheduleValue is a work schedule flag (inject.ParseSchedule).
type scheduleValue struct {
	p    *[]inject.Step
	spec string
}

// ScheduleVar defines a work schedule flag bound to p.
func ScheduleVar(f *pflag.FlagSet, p *[]inject.Step, name, usage string) {
	f.Var(&scheduleValue{p: p}, name, usage)
}

func (v *scheduleValue) Set(s string) error {
	steps, err := inject.ParseSchedule(s)
	if err != nil {
		return err
	}
	*v.p, v.spec = steps, s
	return nil
}

func (v *scheduleValue) String() string { return v.spec }

func (v *scheduleValue) Type() string { return "work@start,..." }

// Size is a flag of bytes: a whole number with an optional unit (B, KiB,
// MiB, GiB, TiB; K, M, G, T mean the same binary units).
type Size int64

// SizeVar defines a size flag bound to p (which holds the default).
func SizeVar(f *pflag.FlagSet, p *int64, name, usage string) { f.Var((*Size)(p), name, usage) }

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"tib", 40}, {"gib", 30}, {"mib", 20}, {"kib", 10}, {"t", 40}, {"g", 30}, {"m", 20}, {"k", 10}, {"b", 0}}

// Set implements pflag.Value.
func (s *Size) Set(v string) error {
	str := strings.ToLower(strings.TrimSpace(v))
	shift := uint(0)
	for _, u := range sizeUnits {
		if strings.HasSuffix(str, u.suffix) {
			str, shift = strings.TrimSpace(strings.TrimSuffix(str, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseFloat(str, 64)
	if err != nil || n < 0 || math.IsNaN(n) || math.IsInf(n, 0) || n*float64(int64(1)<<shift) > float64(1<<62) {
		return fmt.Errorf("%q is not a size like 512MiB or 8GiB", v)
	}
	*s = Size(n * float64(int64(1)<<shift))
	return nil
}

// String implements pflag.Value.
func (s *Size) String() string {
	if *s == 0 {
		return "0"
	}
	return numfmt.Bytes(int64(*s))
}

// Type implements pflag.Value.
func (s *Size) Type() string { return "size" }

// ProfileAt is cpsweep's --profile-at: a fraction of the answer, or
// "limit" (the first failing rate: sweep.Sweep.ProfileAtLimit).
type ProfileAt struct {
	Frac  float64
	Limit bool
}

// Set parses a fraction or "limit".
func (p *ProfileAt) Set(s string) error {
	if s == "limit" {
		p.Frac, p.Limit = 0, true
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0 && v <= 1) {
		return fmt.Errorf("want a fraction of the answer in (0, 1] or \"limit\", got %q", s)
	}
	p.Frac, p.Limit = v, false
	return nil
}

func (p *ProfileAt) String() string {
	if p.Limit {
		return "limit"
	}
	return strconv.FormatFloat(p.Frac, 'g', -1, 64)
}

// Type names the value in --help.
func (p *ProfileAt) Type() string { return "fraction|limit" }
