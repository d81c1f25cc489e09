package inject

import (
	"strings"
	"testing"
	"time"
)

func TestParseStall(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Stall
		bad  string
	}{
		{"consumer@5s+1s", Stall{"consumer", 5 * time.Second, time.Second}, ""},
		{"lane0@0s+500ms", Stall{"lane0", 0, 500 * time.Millisecond}, ""},
		{"thread3@1m+2s", Stall{"thread3", time.Minute, 2 * time.Second}, ""},
		{"consumer@5s", Stall{}, "STAGE@START+DURATION"},
		{"@5s+1s", Stall{}, "STAGE@START+DURATION"},
		{"consumer@x+1s", Stall{}, "durations"},
		{"consumer@1s+0s", Stall{}, "above 0"},
		{"consumer@1s+2m", Stall{}, "at most 1m0s"},
		{"consumer@-1s+1s", Stall{}, "start must be"},
	} {
		got, err := ParseStall(tc.spec)
		switch {
		case tc.bad == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.spec, got, err, tc.want)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%q: %v, want an error about %q", tc.spec, err, tc.bad)
		}
	}
}

func TestCheckStalls(t *testing.T) {
	recv := map[string]int{"consumer": 1, "lane": 2}
	for _, tc := range []struct {
		stall Stall
		bad   string
	}{
		{Stall{"consumer", 0, time.Second}, ""},
		{Stall{"lane1", 0, time.Second}, ""},
		{Stall{"lane2", 0, time.Second}, "lane1 is the last lane"},
		{Stall{"thread0", 0, time.Second}, "no thread stage"},
		{Stall{"pipe", 0, time.Second}, "want consumer, lane<N> or thread<N>"},
		{Stall{"lanex", 0, time.Second}, "want lane<N>"},
	} {
		err := CheckStalls([]Stall{tc.stall}, recv)
		if (tc.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%v: %v, want %q", tc.stall, err, tc.bad)
		}
	}
	many := make([]Stall, MaxStalls+1)
	for i := range many {
		many[i] = Stall{"consumer", 0, time.Second}
	}
	if err := CheckStalls(many, recv); err == nil {
		t.Error("more than MaxStalls accepted")
	}
	w := Windows([]Stall{{"lane0", 5 * time.Second, time.Second}, {"consumer", 0, time.Second}, {"lane0", time.Second, 2 * time.Second}}, "lane0")
	if len(w) != 2 || w[0] != [2]time.Duration{time.Second, 3 * time.Second} || w[1] != [2]time.Duration{5 * time.Second, 6 * time.Second} {
		t.Errorf("windows of lane0: %v", w)
	}
}

func TestWorkSchedule(t *testing.T) {
	steps, err := ParseSchedule("10us@0s,40us@20s, 0s@30s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ at, want time.Duration }{
		{0, 10 * time.Microsecond}, {19 * time.Second, 10 * time.Microsecond}, {20 * time.Second, 40 * time.Microsecond}, {time.Hour, 0},
	} {
		if got := WorkAt(steps, tc.at); got != tc.want {
			t.Errorf("work at %v: %v, want %v", tc.at, got, tc.want)
		}
	}
	for _, bad := range []string{"10us", "10us@0s,5us@0s", "1s@0s", "x@0s", "10us@5s,20us@1s"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if WorkAt(nil, time.Second) != 0 {
		t.Error("no schedule has work")
	}
}
