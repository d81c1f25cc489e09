package jobmetrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Operator is one operator's metrics in one scrape: its times in ms per
// second (averaged over its instances), its records counter and rate
// (summed), each with whether it was there.
type Operator struct {
	Busy, BackPressured, Idle float64
	Times                     int // instances that gave all three times
	Records                   float64
	HasRecords                bool
	Rate                      float64
	HasRate                   bool
}

// Parse reads a text exposition's operators by m.
func (m Mapping) Parse(r io.Reader) (map[string]*Operator, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse the job's metrics: %w", err)
	}
	ops := map[string]*Operator{}
	raw := map[string]string{} // operator name -> the label value it came from
	type times struct{ busy, pressured, idle, n float64 }
	inst := map[string]map[string]*times{} // operator -> instance (its other labels) -> times
	for name, fam := range fams {
		field := m.field(name)
		if field == "" {
			continue
		}
		for _, mt := range fam.GetMetric() {
			op, instance, err := m.operator(mt, raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if op == "" {
				continue
			}
			v := value(mt)
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("%s of operator %s is %v", name, op, v)
			}
			o := ops[op]
			if o == nil {
				if len(ops) == MaxOperators {
					return nil, fmt.Errorf("more than %d operators", MaxOperators)
				}
				o = &Operator{}
				ops[op] = o
				inst[op] = map[string]*times{}
			}
			switch field {
			case "records_in":
				o.Records, o.HasRecords = o.Records+v, true
			case "records_in_rate":
				o.Rate, o.HasRate = o.Rate+v, true
			default:
				if v > 1000*1.05 { // ms per second, a little over for a period's rounding
					return nil, fmt.Errorf("%s of operator %s is %v ms per second", name, op, v)
				}
				t := inst[op][instance]
				if t == nil {
					t = &times{}
					inst[op][instance] = t
				}
				switch field {
				case "busy":
					t.busy = v
				case "back_pressured":
					t.pressured = v
				case "idle":
					t.idle = v
				}
				t.n++
			}
		}
	}
	for op, is := range inst {
		o := ops[op]
		for _, t := range is {
			if t.n == 3 { // an instance with all three times
				o.Busy += t.busy
				o.BackPressured += t.pressured
				o.Idle += t.idle
				o.Times++
			}
		}
		if o.Times > 0 {
			n := float64(o.Times)
			o.Busy, o.BackPressured, o.Idle = o.Busy/n, o.BackPressured/n, o.Idle/n
		}
	}
	return ops, nil
}

// field says which of the mapping's metrics a family is ("": none).
func (m Mapping) field(metric string) string {
	for _, f := range [][2]string{{"busy", m.Busy}, {"back_pressured", m.BackPressured}, {"idle", m.Idle}, {"records_in", m.RecordsIn}, {"records_in_rate", m.RecordsInRate}} {
		if matches(metric, f[1]) {
			return f[0]
		}
	}
	return ""
}

// operator names a sample's operator by the first of the mapping's labels
// it has (its value made a name the analyses can use), and its instance
// by the rest of its labels; "" when it has none of them.
func (m Mapping) operator(mt *dto.Metric, raw map[string]string) (op, instance string, err error) {
	labels := map[string]string{}
	for _, l := range mt.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	var key string
	for _, l := range m.OperatorLabels {
		if v := labels[l]; v != "" {
			op, key = v, l
			break
		}
	}
	if op == "" {
		return "", "", nil
	}
	var rest []string
	for k, v := range labels {
		if k != key && !slices.Contains(m.OperatorLabels, k) {
			rest = append(rest, k+"="+v)
		}
	}
	slices.Sort(rest)
	instance = strings.Join(rest, ",")
	name := opName(op)
	if prev, ok := raw[name]; ok && prev != op {
		return "", "", fmt.Errorf("operators %q and %q would both be named %q", prev, op, name)
	}
	raw[name] = op
	return name, instance, nil
}

// opName makes a label value an operator's name: '/', spaces and
// backslashes become '_', at most 64 bytes.
func opName(v string) string {
	n := strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '\t' || r == '\n' || r == '\\' {
			return '_'
		}
		return r
	}, v)
	if len(n) > 64 {
		n = n[:64]
	}
	return strings.ToValidUTF8(n, "_")
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return math.NaN()
}
