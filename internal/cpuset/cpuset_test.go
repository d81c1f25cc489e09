package cpuset

import (
	"reflect"
	"testing"
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
