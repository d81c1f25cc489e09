package tsc

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Features describes whether the TSC of this machine can be used as a clock.
type Features struct {
	Native      bool   `json:"native"`         // an x86 TSC is read (false: monotonic fallback)
	ConstantTSC bool   `json:"constant_tsc"`   // rate does not follow CPU frequency scaling
	NonstopTSC  bool   `json:"nonstop_tsc"`    // keeps counting in deep C-states
	KnownFreq   bool   `json:"tsc_known_freq"` // frequency reported by the CPU/hypervisor
	RDTSCP      bool   `json:"rdtscp"`
	ClockSource string `json:"clocksource"` // the kernel's current clocksource
}

// Invariant reports whether TSC differences measure elapsed time reliably.
func (f Features) Invariant() bool {
	return !f.Native || (f.ConstantTSC && f.NonstopTSC)
}

// Problem returns a sentence saying why the TSC should not be trusted, or "".
func (f Features) Problem() string {
	if !f.Native {
		return ""
	}
	var missing []string
	if !f.ConstantTSC {
		missing = append(missing, "constant_tsc")
	}
	if !f.NonstopTSC {
		missing = append(missing, "nonstop_tsc")
	}
	if len(missing) > 0 {
		return fmt.Sprintf("CPU lacks %s: TSC differences may not measure elapsed time", strings.Join(missing, " and "))
	}
	if f.ClockSource != "" && f.ClockSource != "tsc" {
		return fmt.Sprintf("kernel clocksource is %q, not tsc: the kernel does not trust this TSC", f.ClockSource)
	}
	return ""
}

// DetectFeatures reads /proc/cpuinfo and the clocksource from sysfs.
func DetectFeatures() (Features, error) {
	f := Features{Native: Native}
	cs, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err == nil {
		f.ClockSource = strings.TrimSpace(string(cs))
	}
	if !Native {
		return f, nil
	}
	fh, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return f, fmt.Errorf("read cpu flags: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		_, list, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, flag := range strings.Fields(list) {
			switch flag {
			case "constant_tsc":
				f.ConstantTSC = true
			case "nonstop_tsc":
				f.NonstopTSC = true
			case "tsc_known_freq":
				f.KnownFreq = true
			case "rdtscp":
				f.RDTSCP = true
			}
		}
		break // all CPUs of one machine report the same flags
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("read cpu flags: %w", err)
	}
	return f, nil
}

// Pair is a TSC value and a CLOCK_MONOTONIC_RAW reading taken together (the
// paper's clock_gettime_tsc). Uncertainty is the TSC span of the read: the
// clock was read somewhere inside [TSC-Uncertainty/2, TSC+Uncertainty/2].
type Pair struct {
	TSC         uint64
	MonoRawNs   int64
	Uncertainty uint64
}

// ReadPair reads CLOCK_MONOTONIC_RAW between two TSC reads, tries a few
// times and keeps the tightest, so a preemption in the middle does not skew it.
func ReadPair() (Pair, error) {
	best := Pair{Uncertainty: math.MaxUint64}
	for i := 0; i < 16; i++ {
		var ts unix.Timespec
		t0 := Read()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
			return Pair{}, fmt.Errorf("clock_gettime(CLOCK_MONOTONIC_RAW): %w", err)
		}
		t1 := Read()
		if t1-t0 < best.Uncertainty {
			best = Pair{TSC: t0 + (t1-t0)/2, MonoRawNs: ts.Nano(), Uncertainty: t1 - t0}
		}
	}
	return best, nil
}

// Calibrate measures the TSC frequency in Hz against CLOCK_MONOTONIC_RAW over
// the given interval (100 ms gives sub-ppm agreement on an idle VM). On the
// fallback the frequency is exactly 1 GHz by construction.
func Calibrate(over time.Duration) (float64, error) {
	if !Native {
		return 1e9, nil
	}
	if over <= 0 {
		return 0, errors.New("calibration interval must be positive")
	}
	a, err := ReadPair()
	if err != nil {
		return 0, err
	}
	time.Sleep(over)
	b, err := ReadPair()
	if err != nil {
		return 0, err
	}
	dns := b.MonoRawNs - a.MonoRawNs
	if dns <= 0 || b.TSC <= a.TSC {
		return 0, fmt.Errorf("calibration failed: clock moved %d ns and TSC %d ticks", dns, int64(b.TSC-a.TSC))
	}
	return float64(b.TSC-a.TSC) * 1e9 / float64(dns), nil
}

// Clock converts TSC ticks of this node into durations and Unix-epoch
// nanoseconds. It is immutable after NewClock, so hot loops share it freely.
type Clock struct {
	Hz         float64 `json:"hz"`
	AnchorTSC  uint64  `json:"anchor_tsc"`
	AnchorUnix int64   `json:"anchor_unix_ns"`
	nsPerTick  float64
}

// NewClock calibrates the frequency (over the given interval) and anchors
// TSC to the realtime clock. Wall time is used only to put timestamps into
// tuples that another process on the same host (or an NTP-synced host) can
// compare; durations never go through the wall clock.
func NewClock(calibrateOver time.Duration) (*Clock, error) {
	hz, err := Calibrate(calibrateOver)
	if err != nil {
		return nil, err
	}
	return NewClockHz(hz), nil
}

// NewClockHz anchors a clock of a known frequency to the realtime clock now.
func NewClockHz(hz float64) *Clock {
	best := uint64(math.MaxUint64)
	var anchorTSC uint64
	var anchorUnix int64
	for i := 0; i < 16; i++ {
		t0 := Read()
		now := time.Now().UnixNano()
		t1 := Read()
		if t1-t0 < best {
			best, anchorTSC, anchorUnix = t1-t0, t0+(t1-t0)/2, now
		}
	}
	return &Clock{Hz: hz, AnchorTSC: anchorTSC, AnchorUnix: anchorUnix, nsPerTick: 1e9 / hz}
}

// UnixNano converts a TSC value of this node to Unix-epoch nanoseconds.
func (c *Clock) UnixNano(ticks uint64) int64 {
	return c.AnchorUnix + int64(float64(int64(ticks-c.AnchorTSC))*c.nsPerTick)
}

// TicksToNs converts a tick count to nanoseconds.
func (c *Clock) TicksToNs(ticks uint64) float64 { return float64(ticks) * c.nsPerTick }

// Ticks converts a duration to ticks, rounding to the nearest tick.
func (c *Clock) Ticks(d time.Duration) uint64 {
	return uint64(math.Round(float64(d) * c.Hz / 1e9))
}

// NowUnixNano returns the current time in Unix nanoseconds through the TSC.
func (c *Clock) NowUnixNano() int64 { return c.UnixNano(Read()) }

// Now reads the TSC with the cheaper, unordered instruction (ReadFast):
// for loops that compare against a deadline in ticks.
func (c *Clock) Now() uint64 { return ReadFast() }
