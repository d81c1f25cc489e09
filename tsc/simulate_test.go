package tsc

import (
	"strings"
	"testing"
	"time"
)

func TestSimulatedClockAndInjectedDelay(t *testing.T) {
	now, err := SimulatedClock("0.5,1000")
	if err != nil {
		t.Fatal(err)
	}
	a, b := Read(), now()
	if want := 0.5*float64(a) + 1000; float64(b) < want || float64(b) > want+0.5*1e9 {
		t.Errorf("simulated %d for TSC %d, want about %.0f", b, a, want)
	}
	delay, err := InjectedDelay("20us+10us,50us")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		out, in := delay()
		if out < 20*time.Microsecond || out >= 30*time.Microsecond || in != 50*time.Microsecond {
			t.Fatalf("delays %v, %v: want 20..30µs out and 50µs in", out, in)
		}
	}
	if d, err := InjectedDelay(""); d != nil || err != nil {
		t.Errorf("no spec: %v %v", d != nil, err)
	}
	for _, bad := range []struct{ spec, fn string }{{"1,x", "clock"}, {"-1,0", "clock"}, {"nocomma", "clock"},
		{"20us", "delay"}, {"2s,1us", "delay"}, {"x,1us", "delay"}} {
		var err error
		if bad.fn == "clock" {
			_, err = SimulatedClock(bad.spec)
		} else {
			_, err = InjectedDelay(bad.spec)
		}
		if err == nil || !strings.Contains(err.Error(), bad.spec) {
			t.Errorf("%s %q: %v", bad.fn, bad.spec, err)
		}
	}
}
