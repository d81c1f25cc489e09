package agent

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/sweep"
)

// FuzzParseSince: whatever a request's since= holds, it is cursors within
// the bounds or an error, never a panic.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"", "lane0:3", "lane0:3,consumer:18446744073709551615", "a:1,a:2", ":", "x:-1", strings.Repeat("s:1,", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		m, err := parseSince(q)
		if err != nil {
			return
		}
		if len(m) > sweep.MaxActivityStages {
			t.Fatalf("%d cursors from %q", len(m), q)
		}
		for name := range m {
			if name == "" || len(name) > 64 {
				t.Fatalf("stage %q from %q", name, q)
			}
		}
	})
}
