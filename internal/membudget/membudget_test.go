package membudget

import "testing"

func TestDefaultIsAShareOfTheHost(t *testing.T) {
	b := Default()
	if b < 256<<20 || b > 1<<50 {
		t.Fatalf("default budget %d bytes", b)
	}
}
