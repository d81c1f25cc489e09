package osthread

import (
	"reflect"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"", nil, false}, {"none", nil, false}, {"1", []int{1}, false}, {"0,2", []int{0, 2}, false},
		{"0-2,5", []int{0, 1, 2, 5}, false}, {"x", nil, true}, {"3-1", nil, true}, {"-1", nil, true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestPinThread(t *testing.T) {
	cpus, err := Allowed()
	if err != nil || len(cpus) == 0 {
		t.Fatal(cpus, err)
	}
	done := make(chan error)
	go func() { done <- PinThread(cpus[len(cpus)-1]) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestNapIsShort(t *testing.T) {
	done := make(chan time.Duration)
	go func() {
		LockWithTightTimers()
		done <- NapOvershoot(50*time.Microsecond, 20)
	}()
	over := <-done
	t.Logf("nanosleep(50us) overshoot p90: %v", over)
	// Generous: a loaded VM; time.Sleep would overshoot by ~1 ms.
	if over > 900*time.Microsecond {
		t.Fatalf("Nap overshoots by %v", over)
	}
}
