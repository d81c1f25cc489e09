package tsc

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestReadIsMonotonicOnOneThread(t *testing.T) {
	prev := Read()
	for i := 0; i < 100000; i++ {
		now := Read()
		if now < prev {
			t.Fatalf("TSC went backwards: %d after %d", now, prev)
		}
		prev = now
	}
}

func TestCalibrationAgreesWithWallClock(t *testing.T) {
	c, err := NewClock(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if c.Hz < 1e8 || c.Hz > 1e11 {
		t.Fatalf("implausible TSC frequency %.0f Hz", c.Hz)
	}
	start, t0 := time.Now(), Read()
	time.Sleep(200 * time.Millisecond)
	elapsed, t1 := time.Since(start), Read()
	got := c.TicksToNs(t1 - t0)
	// Generous: scheduling noise between the paired reads on a shared VM.
	if rel := math.Abs(got-float64(elapsed)) / float64(elapsed); rel > 0.01 {
		t.Fatalf("TSC says %.0f ns, time.Since says %d ns (%.3f%% apart)", got, elapsed, rel*100)
	}
	// Generous: a preemption between the two reads under parallel tests.
	if d := c.NowUnixNano() - time.Now().UnixNano(); d > int64(10*time.Millisecond) || d < -int64(10*time.Millisecond) {
		t.Fatalf("TSC clock is %d ns away from the realtime clock", d)
	}
}

func TestTicksRoundTrip(t *testing.T) {
	c := NewClockHz(2.5e9)
	for _, tc := range []struct {
		d     time.Duration
		ticks uint64
	}{{time.Nanosecond, 3}, {time.Microsecond, 2500}, {time.Second, 2_500_000_000}, {0, 0}} {
		if got := c.Ticks(tc.d); got != tc.ticks {
			t.Errorf("Ticks(%v) = %d, want %d", tc.d, got, tc.ticks)
		}
	}
}

func TestFeaturesProblem(t *testing.T) {
	for _, tc := range []struct {
		f    Features
		want bool
	}{
		{Features{Native: true, ConstantTSC: true, NonstopTSC: true, ClockSource: "tsc"}, false},
		{Features{Native: true, ConstantTSC: true, ClockSource: "tsc"}, true},
		{Features{Native: true, ConstantTSC: true, NonstopTSC: true, ClockSource: "hpet"}, true},
		{Features{Native: false}, false},
	} {
		if got := tc.f.Problem() != ""; got != tc.want {
			t.Errorf("%+v: problem=%q, want problem=%v", tc.f, tc.f.Problem(), tc.want)
		}
	}
	f, err := DetectFeatures()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this machine: %+v", f)
	// What the kernel says, read another way.
	if cs, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil && f.ClockSource != strings.TrimSpace(string(cs)) {
		t.Errorf("clocksource %q, the kernel says %q", f.ClockSource, strings.TrimSpace(string(cs)))
	}
	if !Native {
		return
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	has := func(flag string) bool {
		return strings.Contains(string(info), " "+flag+" ") || strings.Contains(string(info), " "+flag+"\n")
	}
	for _, c := range []struct {
		flag string
		got  bool
	}{{"constant_tsc", f.ConstantTSC}, {"nonstop_tsc", f.NonstopTSC}, {"tsc_known_freq", f.KnownFreq}, {"rdtscp", f.RDTSCP}} {
		if c.got != has(c.flag) {
			t.Errorf("%s detected %v, /proc/cpuinfo says %v", c.flag, c.got, has(c.flag))
		}
	}
}

func BenchmarkRead(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = Read()
	}
}

func BenchmarkReadFast(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = ReadFast()
	}
}

// TestClockStaysNearTheWallClock measures how far a calibrated clock's
// Unix time runs from the wall clock over a few seconds: the error a
// sender's intended times carry against a trial's start, which the
// receiver's EarlierSlack (100 ms) must cover with a wide margin.
func TestClockStaysNearTheWallClock(t *testing.T) {
	if !Native {
		t.Skip("no TSC: the fallback clock is the monotonic clock")
	}
	c, err := NewClock(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	for range 6 {
		time.Sleep(500 * time.Millisecond)
		d := time.Duration(c.NowUnixNano() - time.Now().UnixNano())
		worst = max(worst, d.Abs())
	}
	t.Logf("the TSC clock ran at most %v from the wall clock over 3 s", worst)
	if worst > 10*time.Millisecond {
		t.Errorf("the TSC clock ran %v from the wall clock over 3 s: the calibration is off", worst)
	}
}
