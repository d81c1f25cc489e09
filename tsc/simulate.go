package tsc

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// SimulatedClock returns Read, or for "SCALE,OFFSET" a simulated node's
// clock SCALE·TSC + OFFSET: tests relate such nodes against known truth.
func SimulatedClock(spec string) (func() uint64, error) {
	if spec == "" {
		return Read, nil
	}
	a, b, ok := strings.Cut(spec, ",")
	scale, err1 := strconv.ParseFloat(a, 64)
	offset, err2 := strconv.ParseFloat(b, 64)
	if !ok || err1 != nil || err2 != nil || scale <= 0 {
		return nil, fmt.Errorf("simulated clock %q: want SCALE,OFFSET with SCALE > 0", spec)
	}
	return func() uint64 { return uint64(scale*float64(Read()) + offset) }, nil
}

// InjectedDelay reads "OUT[+JITTER],IN[+JITTER]" into a Stamping.Delay:
// this node's probe packets wait OUT plus a uniform jitter up to JITTER on
// leaving and IN (+ jitter) on arriving, which gives asymmetric one-way
// delays in user space, where netem is not available. "" is no delay.
func InjectedDelay(spec string) (func() (time.Duration, time.Duration), error) {
	if spec == "" {
		return nil, nil
	}
	var legs [2][2]time.Duration
	parts := strings.Split(spec, ",")
	if len(parts) != 2 {
		return nil, fmt.Errorf("injected delay %q: want OUT[+JITTER],IN[+JITTER]", spec)
	}
	for i, part := range parts {
		base, jitter, _ := strings.Cut(part, "+")
		for j, v := range []string{base, jitter} {
			if v == "" {
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > time.Second {
				return nil, fmt.Errorf("injected delay %q: %q is not a duration between 0 and 1s", spec, v)
			}
			legs[i][j] = d
		}
	}
	// The package-level generator: the responder and the prober draw from
	// different goroutines.
	leg := func(l [2]time.Duration) time.Duration {
		if l[1] == 0 {
			return l[0]
		}
		return l[0] + time.Duration(rand.Int64N(int64(l[1])))
	}
	return func() (time.Duration, time.Duration) { return leg(legs[0]), leg(legs[1]) }, nil
}
