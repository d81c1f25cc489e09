package cli

import (
	"github.com/spf13/pflag"

	"github.com/cloudprofiler-go/cp/internal/osthread"
	"github.com/cloudprofiler-go/cp/sender"
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
// flag is read into the sender.Shape it configures.
type ShapeValue struct {
	shape *sender.Shape
	spec  string
}

// ShapeVar defines a shape flag bound to p, with a default spec.
func ShapeVar(f *pflag.FlagSet, p *sender.Shape, name, def, usage string) {
	v := &ShapeValue{shape: p}
	if err := v.Set(def); err != nil {
		panic("default shape " + def + ": " + err.Error()) // a programming error, not user input
	}
	f.Var(v, name, usage)
}

// Set implements pflag.Value.
func (v *ShapeValue) Set(s string) error {
	sh, err := sender.ParseShape(s)
	if err != nil {
		return err
	}
	*v.shape, v.spec = sh, s
	return nil
}

func (v *ShapeValue) String() string { return v.spec }

// Type implements pflag.Value.
func (v *ShapeValue) Type() string { return "shape" }
