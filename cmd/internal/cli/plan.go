package cli

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
)

// MaxPlanFile bounds a plan file: a sweep's settings are a few hundred
// bytes.
const MaxPlanFile = 1 << 20

// ApplyPlan sets a command's flags from a plan file: a YAML mapping whose
// keys are the flags' names (without the dashes) and whose values are a
// flag's value, or a list of them for a flag given more than once. Each
// value goes through the flag's own parser, so the file is checked
// exactly as the flags are. A flag given on the command line overrides
// the file's (a list as a whole). Settings in skip are refused (the plan
// flag itself, a secret that has no place in a file). It returns the
// names of the settings the file set (PlanReach shows what they reach).
func ApplyPlan(f *pflag.FlagSet, path string, skip ...string) ([]string, error) {
	b, err := readfile.Limited(path, MaxPlanFile)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return ApplyPlanText(f, path, b, skip...)
}

// ApplyPlanText is ApplyPlan of a plan already read (b), from path.
func ApplyPlanText(f *pflag.FlagSet, path string, b []byte, skip ...string) ([]string, error) {
	path = termsafe.Escape(path)
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("plan %s is empty: give it the sweep's flags as name: value", path)
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("plan %s: not a mapping of settings (name: value, one a line)", path)
	}
	given := map[string]bool{}
	f.Visit(func(fl *pflag.Flag) { given[fl.Name] = true })
	seen := map[string]bool{}
	var set []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := strings.TrimLeft(k.Value, "-")
		fl := f.Lookup(name)
		switch {
		case fl == nil && flagLike(name):
			return nil, fmt.Errorf("plan %s, line %d: unknown setting %q: a plan's settings are the flags of --help, without the dashes", path, k.Line, k.Value)
		case fl == nil: // not shown: a file that is no plan (a .env) may hold a secret there
			return nil, fmt.Errorf("plan %s, line %d: not a setting: a plan's settings are the flags of --help, without the dashes", path, k.Line)
		case contains(skip, name):
			return nil, fmt.Errorf("plan %s, line %d: %q has no place in a plan file (give it as a flag)", path, k.Line, name)
		case seen[name]:
			return nil, fmt.Errorf("plan %s, line %d: %q is set twice", path, k.Line, name)
		}
		seen[name] = true
		if given[name] {
			continue // the command line's value wins
		}
		values, err := planValues(v)
		if err != nil {
			return nil, fmt.Errorf("plan %s, line %d: %s: %w", path, k.Line, name, err)
		}
		if len(values) > 1 && !isList(fl) {
			return nil, fmt.Errorf("plan %s, line %d: %s takes one value, not a list", path, k.Line, name)
		}
		for _, s := range values {
			if err := f.Set(name, s); err != nil {
				return nil, fmt.Errorf("plan %s, line %d: %s: %w", path, k.Line, name, err)
			}
		}
		set = append(set, name)
	}
	return set, nil
}

// flagLike says whether s could be a flag's name (lower-case words and
// dashes), which an error may quote.
func flagLike(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// planValues are a setting's values: a scalar, or a list of scalars.
func planValues(v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		var out []string
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("a list holds values, not lists or mappings")
			}
			out = append(out, e.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value or a list of values, not a mapping")
}

func isList(fl *pflag.Flag) bool {
	_, ok := fl.Value.(pflag.SliceValue)
	return ok
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// PlanOf is the plan a command ran with: every flag that was set (on the
// command line or by a plan file), as ApplyPlan reads it back, sorted by
// name, leaving out the settings in skip (a secret, the plan flag). A
// header says where it came from.
func PlanOf(f *pflag.FlagSet, header string, skip ...string) []byte {
	type setting struct {
		name   string
		values []string
		list   bool
	}
	var set []setting
	f.Visit(func(fl *pflag.Flag) {
		if contains(skip, fl.Name) {
			return
		}
		s := setting{name: fl.Name}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			s.values, s.list = sv.GetSlice(), true
		} else {
			s.values = []string{fl.Value.String()}
		}
		set = append(set, s)
	})
	sort.Slice(set, func(i, j int) bool { return set[i].name < set[j].name })
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		fmt.Fprintf(&b, "# %s\n", line)
	}
	for _, s := range set {
		if !s.list {
			fmt.Fprintf(&b, "%s: %s\n", s.name, quote(s.values[0]))
			continue
		}
		fmt.Fprintf(&b, "%s:\n", s.name)
		for _, v := range s.values {
			fmt.Fprintf(&b, "  - %s\n", quote(v))
		}
	}
	return b.Bytes()
}

// quote writes a value as ApplyPlan reads it back: plain where YAML reads
// the same text back as a plain scalar (2, 10.0.0.2:9101, 500k), quoted
// where it would not (a "# comment", "kind: a", a leading "-", "").
func quote(v string) string {
	var doc yaml.Node
	if v != "" && yaml.Unmarshal([]byte("k: "+v+"\n"), &doc) == nil && len(doc.Content) == 1 {
		if m := doc.Content[0]; m.Kind == yaml.MappingNode && len(m.Content) == 2 {
			if n := m.Content[1]; n.Kind == yaml.ScalarNode && n.Style == 0 && n.Value == v {
				return v
			}
		}
	}
	return strconv.Quote(v)
}
