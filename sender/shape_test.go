package sender

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/scenarios"
)

func TestParseShape(t *testing.T) {
	for _, tc := range []struct {
		spec string
		kind string
		err  bool
	}{
		{"", "constant", false}, {"constant", "constant", false}, {"poisson", "poisson", false}, {"poisson:7", "poisson", false},
		{"step:1x@2s,2x@1s", "step", false}, {"step:1@1s", "step", false}, {"ramp:0.5x..1.5x", "ramp", false}, {"sine:0.2,10s", "sine", false},
		{"step:1x", "", true}, {"step:0x@1s", "", true}, {"step:1x@-1s", "", true}, {"ramp:1x", "", true}, {"ramp:ax..1x", "", true},
		{"sine:2,1s", "", true}, {"sine:0.1", "", true}, {"square", "", true}, {"poisson:x", "", true}, {"replay:/no/such/file", "", true},
	} {
		sh, err := scenarios.ParseShape(tc.spec)
		if (err != nil) != tc.err || (!tc.err && sh.Kind != tc.kind) {
			t.Errorf("ParseShape(%q) = %+v, %v", tc.spec, sh, err)
		}
	}
}

// countIn returns the slots due in [from, to) seconds of a schedule on a
// 1 GHz "TSC" starting at 0.
func countIn(s Schedule, n int, from, to float64) int {
	c := 0
	for k := 0; k < n; k++ {
		d := float64(s.Due(uint64(k))) / 1e9
		if d >= from && d < to {
			c++
		}
	}
	return c
}

func TestShapedSchedules(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.txt")
	if err := os.WriteFile(trace, []byte("# seconds rate\n0 100\n1 300\n2 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const rate = 2000.0 // slots per second (bucket 1)
	for _, tc := range []struct {
		spec      string
		length    time.Duration
		intervals [][3]float64 // from, to, expected slots
	}{
		{"constant", 2 * time.Second, [][3]float64{{0, 1, 2000}, {1, 2, 2000}}},
		// mean of 1x and 3x is 2x: normalised to 1000 and 3000 slots/s
		{"step:1x@1s,3x@1s", 4 * time.Second, [][3]float64{{0, 1, 1000}, {1, 2, 3000}, {2, 3, 1000}, {3, 4, 3000}}},
		// 0 -> 2x linearly over 2 s: the first second carries a quarter
		{"ramp:0x..2x", 2 * time.Second, [][3]float64{{0, 1, 1000}, {1, 2, 3000}}},
		{"sine:0.5,2s", 4 * time.Second, [][3]float64{{0, 1, 2000 * (1 + 0.5*2/math.Pi)}, {1, 2, 2000 * (1 - 0.5*2/math.Pi)}, {0, 4, 8000}}},
		// trace 100, 300, 100 (+ last held 1 s): mean 166.7, scaled to 2000
		{"replay:" + trace, 3 * time.Second, [][3]float64{{0, 1, 1200}, {1, 2, 3600}, {2, 3, 1200}}},
	} {
		sh, err := scenarios.ParseShape(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSchedule(sh, 0, 1e9, 1, rate, tc.length, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := int(rate*tc.length.Seconds()) + 100
		prev := uint64(0)
		for k := 0; k < n; k++ {
			d := s.Due(uint64(k))
			if d < prev {
				t.Fatalf("%s: slot %d due before slot %d", tc.spec, k, k-1)
			}
			prev = d
		}
		s, _ = NewSchedule(sh, 0, 1e9, 1, rate, tc.length, 0)
		for _, iv := range tc.intervals {
			s2, _ := NewSchedule(sh, 0, 1e9, 1, rate, tc.length, 0)
			got := float64(countIn(s2, n, iv[0], iv[1]))
			if math.Abs(got-iv[2]) > math.Max(3, 0.01*iv[2]) {
				t.Errorf("%s: %.0f slots in [%gs, %gs), want %.0f", tc.spec, got, iv[0], iv[1], iv[2])
			}
		}
		end := uint64(tc.length.Seconds() * 1e9)
		want := int(rate * tc.length.Seconds())
		if got := int(s.SlotsBefore(end)); math.Abs(float64(got-want)) > math.Max(3, 0.01*float64(want)) {
			t.Errorf("%s: SlotsBefore(end) = %d, want ~%d", tc.spec, got, want)
		}
	}
}

func TestPoissonArrivals(t *testing.T) {
	sh, _ := scenarios.ParseShape("poisson:3")
	s, err := NewSchedule(sh, 0, 1e9, 1, 10000, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50000
	var gaps []float64
	prev := float64(s.Due(0))
	for k := 1; k < n; k++ {
		d := float64(s.Due(uint64(k)))
		gaps = append(gaps, d-prev)
		prev = d
	}
	var mean, sq float64
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	cv := math.Sqrt(sq/float64(len(gaps))) / mean
	if math.Abs(mean-1e5)/1e5 > 0.02 || math.Abs(cv-1) > 0.05 {
		t.Fatalf("gaps: mean %.0f ticks (want 100000), coefficient of variation %.3f (want 1 for exponential)", mean, cv)
	}
	// Another thread gets an independent sequence; the same seed repeats.
	a, _ := NewSchedule(sh, 0, 1e9, 1, 10000, time.Second, 0)
	b, _ := NewSchedule(sh, 0, 1e9, 1, 10000, time.Second, 1)
	c, _ := NewSchedule(sh, 0, 1e9, 1, 10000, time.Second, 0)
	if a.Due(10) == b.Due(10) || a.Due(20) != c.Due(20) {
		t.Fatal("poisson sequences are not per-thread and reproducible")
	}
}

func TestScheduleDueDoesNotAllocate(t *testing.T) {
	for _, spec := range []string{"constant", "poisson", "sine:0.3,1s", "step:1x@1s,2x@1s"} {
		sh, _ := scenarios.ParseShape(spec)
		s, _ := NewSchedule(sh, 0, 1e9, 1, 1e6, time.Second, 0)
		k := uint64(0)
		if a := testing.AllocsPerRun(10000, func() { s.Due(k); k++ }); a != 0 {
			t.Errorf("%s: %.1f allocations per Due", spec, a)
		}
	}
}
