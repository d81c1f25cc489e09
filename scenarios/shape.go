package scenarios

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/readfile"
)

// Shape describes how the rate varies within a run, relative to the mean
// rate. Spec strings (--shape):
//
//	constant                   the mean rate throughout (default)
//	step:1x@2s,2x@1s,...       piecewise constant multipliers of the mean, each for a
//	                           duration, repeating; normalised so the mean is the rate
//	ramp:0.5x..1.5x            linear from the first to the second multiplier over the run
//	sine:0.2,10s               mean × (1 + 0.2·sin(2πt/10s))
//	poisson                    exponential gaps between buckets (Poisson arrivals) at the mean rate
//	replay:FILE                a recorded trace: lines "seconds rate" (piecewise constant),
//	                           scaled so its mean is the rate; repeats if shorter than the run
type Shape struct {
	Kind   string    `json:"kind"`
	Mults  []float64 `json:"mults"`    // step: multipliers; ramp: from, to
	Spans  []float64 `json:"spans_s"`  // step/replay: seconds per piece
	Amp    float64   `json:"amp"`      // sine
	Period float64   `json:"period_s"` // sine
	Seed   uint64    `json:"seed"`     // poisson
	Source string    `json:"source"`   // replay: file name
}

// ParseShape reads a --shape spec.
func ParseShape(spec string) (Shape, error) {
	kind, arg, _ := strings.Cut(strings.TrimSpace(spec), ":")
	bad := func(format string, a ...any) (Shape, error) {
		return Shape{}, fmt.Errorf("shape %q: "+format+" (see dgsend --help)", append([]any{spec}, a...)...)
	}
	mult := func(s string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "x"), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%q is not a multiplier like 1.5x", s)
		}
		return v, nil
	}
	switch kind {
	case "", "constant":
		return Shape{Kind: "constant"}, nil
	case "poisson":
		seed := uint64(1)
		if arg != "" {
			v, err := strconv.ParseUint(arg, 10, 64)
			if err != nil {
				return bad("the seed must be a number")
			}
			seed = v
		}
		return Shape{Kind: "poisson", Seed: seed}, nil
	case "step":
		sh := Shape{Kind: "step"}
		for _, part := range strings.Split(arg, ",") {
			m, d, ok := strings.Cut(part, "@")
			if !ok {
				return bad("each step is MULTIPLIER@DURATION, e.g. 1x@2s")
			}
			v, err := mult(m)
			if err != nil {
				return bad("%v", err)
			}
			dur, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil || dur <= 0 {
				return bad("%q is not a positive duration", d)
			}
			sh.Mults, sh.Spans = append(sh.Mults, v), append(sh.Spans, dur.Seconds())
		}
		return sh, sh.check()
	case "ramp":
		from, to, ok := strings.Cut(arg, "..")
		if !ok {
			return bad("a ramp is FROM..TO, e.g. 0.5x..1.5x")
		}
		a, err := mult(from)
		if err != nil {
			return bad("%v", err)
		}
		b, err := mult(to)
		if err != nil {
			return bad("%v", err)
		}
		sh := Shape{Kind: "ramp", Mults: []float64{a, b}}
		return sh, sh.check()
	case "sine":
		a, p, ok := strings.Cut(arg, ",")
		if !ok {
			return bad("a sine is AMPLITUDE,PERIOD, e.g. 0.2,10s")
		}
		amp, err := strconv.ParseFloat(a, 64)
		if err != nil || amp < 0 || amp > 1 {
			return bad("the amplitude must be between 0 and 1 (a fraction of the mean)")
		}
		period, err := time.ParseDuration(p)
		if err != nil || period <= 0 {
			return bad("%q is not a positive period", p)
		}
		return Shape{Kind: "sine", Amp: amp, Period: period.Seconds()}, nil
	case "replay":
		return loadTrace(arg)
	}
	return bad("unknown shape %q (constant, step, ramp, sine, poisson, replay)", kind)
}

// Limits of a shape (from a flag, a trace file or a controller's request).
const (
	MaxShapePieces = 100_000
	MaxMultiplier  = 1e6
	MaxShapeSpan   = 24 * 3600.0 // seconds
	maxSourceLen   = 256
)

// Validate checks a shape as it arrives from outside (e.g. inline in a
// trial request): a known kind, and every number finite and in range. It
// allocates nothing.
func (s Shape) Validate() error {
	finite := func(v, lo, hi float64) bool { return !math.IsNaN(v) && v >= lo && v <= hi }
	if len(s.Source) > maxSourceLen {
		return fmt.Errorf("shape source name longer than %d bytes", maxSourceLen)
	}
	switch s.Kind {
	case "", "constant", "poisson":
		if len(s.Mults) > 0 || len(s.Spans) > 0 {
			return fmt.Errorf("shape %s takes no multipliers", s.Kind)
		}
		return nil
	case "sine":
		if !finite(s.Amp, 0, 1) || !finite(s.Period, 1e-6, MaxShapeSpan) || s.Period == 0 {
			return fmt.Errorf("shape sine: amplitude must be 0..1 and period above 0 and at most %gs", MaxShapeSpan)
		}
		return nil
	case "ramp":
		if len(s.Mults) != 2 || len(s.Spans) != 0 {
			return fmt.Errorf("shape ramp has two multipliers, from and to")
		}
	case "step", "replay":
		if len(s.Mults) < 1 || len(s.Mults) > MaxShapePieces || len(s.Spans) != len(s.Mults) {
			return fmt.Errorf("shape %s needs 1..%d pieces, each with a multiplier and a span", s.Kind, MaxShapePieces)
		}
		for _, d := range s.Spans {
			if !finite(d, 0, MaxShapeSpan) || d == 0 {
				return fmt.Errorf("shape %s: every span must be above 0 and at most %gs", s.Kind, MaxShapeSpan)
			}
		}
	default:
		return fmt.Errorf("unknown shape kind %.32q (constant, step, ramp, sine, poisson, replay)", s.Kind)
	}
	for _, m := range s.Mults {
		if !finite(m, 0, MaxMultiplier) {
			return fmt.Errorf("shape %s: every multiplier must be 0..%g", s.Kind, MaxMultiplier)
		}
	}
	return s.check()
}

func (s Shape) check() error {
	total := 0.0
	for _, m := range s.Mults {
		total += m
	}
	if total <= 0 {
		return fmt.Errorf("shape %s: the rate is zero throughout", s.Kind)
	}
	return nil
}

// ShapeFileOf is the trace file that ParseShape of spec reads ("" for a
// shape that reads none).
func ShapeFileOf(spec string) string {
	if kind, arg, _ := strings.Cut(strings.TrimSpace(spec), ":"); kind == "replay" {
		return arg
	}
	return ""
}

// loadTrace reads "seconds rate" lines (times increasing from 0; each rate
// holds until the next time; the last holds for the mean gap).
func loadTrace(path string) (Shape, error) {
	data, err := readfile.Limited(path, 16<<20)
	if err != nil {
		return Shape{}, fmt.Errorf("replay trace: %w", err)
	}
	var ts, rates []float64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(strings.ReplaceAll(text, ",", " "))
		if len(fields) != 2 {
			return Shape{}, fmt.Errorf("replay trace %s line %d: want two numbers, \"seconds rate\"", path, line)
		}
		t, err1 := strconv.ParseFloat(fields[0], 64)
		r, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil || r < 0 || (len(ts) > 0 && t <= ts[len(ts)-1]) || (len(ts) == 0 && t != 0) {
			return Shape{}, fmt.Errorf("replay trace %s line %d: times must start at 0 and increase, rates be >= 0", path, line)
		}
		if len(ts) == MaxShapePieces {
			return Shape{}, fmt.Errorf("replay trace %s has more than %d lines", path, MaxShapePieces)
		}
		ts, rates = append(ts, t), append(rates, r)
	}
	if err := sc.Err(); err != nil {
		return Shape{}, fmt.Errorf("replay trace %s: %w", path, err)
	}
	if len(ts) == 0 {
		return Shape{}, fmt.Errorf("replay trace %s is empty", path)
	}
	sh := Shape{Kind: "replay", Source: filepath.Base(path)}
	for i := range ts {
		span := 1.0
		if i+1 < len(ts) {
			span = ts[i+1] - ts[i]
		} else if len(ts) > 1 {
			span = ts[len(ts)-1] / float64(len(ts)-1)
		}
		sh.Mults, sh.Spans = append(sh.Mults, rates[i]), append(sh.Spans, span)
	}
	return sh, sh.check()
}

// Multiplier returns the rate multiplier at time t (seconds) of a run
// lasting total seconds, before normalisation. A step or replay shape of
// many pieces is looked up by binary search in its pieces' end times, so
// that tabulating the largest allowed shape takes milliseconds (a linear
// walk per grid step took 144 s for 100,000 pieces).
func (s Shape) Multiplier(total float64) func(t float64) float64 {
	switch s.Kind {
	case "ramp":
		return func(t float64) float64 {
			if total <= 0 {
				return s.Mults[0]
			}
			f := math.Min(t/total, 1)
			return s.Mults[0] + (s.Mults[1]-s.Mults[0])*f
		}
	case "sine":
		return func(t float64) float64 { return 1 + s.Amp*math.Sin(2*math.Pi*t/s.Period) }
	case "step", "replay":
		ends := make([]float64, len(s.Spans)) // ends[i]: where piece i ends within a cycle
		cycle := 0.0
		for i, d := range s.Spans {
			cycle += d
			ends[i] = cycle
		}
		return func(t float64) float64 {
			t = math.Mod(t, cycle)
			i := sort.Search(len(ends), func(i int) bool { return t < ends[i] })
			return s.Mults[min(i, len(s.Mults)-1)]
		}
	}
	return func(float64) float64 { return 1 }
}
