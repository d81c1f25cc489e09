package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/protocol"
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
		if len(m) > protocol.MaxActivityStages {
			t.Fatalf("%d cursors from %q", len(m), q)
		}
		for name := range m {
			if name == "" || len(name) > 64 {
				t.Fatalf("stage %q from %q", name, q)
			}
		}
	})
}

// The hand-written reply is what encoding/json writes.
func TestActivityJSONIsEncodingJSONs(t *testing.T) {
	for _, r := range []protocol.ActivityReply{
		{Stages: []protocol.StageActivity{}},
		{Trial: 3, Running: true, NowNs: 1732470000123456789, Stages: []protocol.StageActivity{
			{Stage: "lane0", Kind: "lane", Next: 18446744073709551615, Lost: 2, Changes: [][3]int64{{1, 0, 5}, {-9223372036854775808, 2, 9223372036854775807}}},
			{Stage: "odd \"name\"\x00é<>&", Kind: "sut", Changes: [][3]int64{}},
		}},
	} {
		want, _ := json.Marshal(r)
		if got := appendActivity(nil, r); !bytes.Equal(bytes.TrimSpace(got), want) {
			t.Errorf("wrote\n%s\nencoding/json writes\n%s", got, want)
		}
	}
}

// BenchmarkActivityReply: the agent's cost of serving a full ring of one
// stage (65536 changes), written by hand and by encoding/json.
func BenchmarkActivityReply(b *testing.B) {
	st := protocol.StageActivity{Stage: "lane0", Kind: "lane", Next: 1 << 20, Changes: make([][3]int64, protocol.MaxActivityChanges)}
	for i := range st.Changes {
		st.Changes[i] = [3]int64{1732470000123456789 + int64(i)*9000, int64(i % 3), int64(i / 2)}
	}
	r := protocol.ActivityReply{Trial: 1, Running: true, NowNs: 1732470001000000000, Stages: []protocol.StageActivity{st}}
	b.Run("by-hand", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf = appendActivity(buf[:0], r)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(st.Changes)), "ns/change")
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, _ = json.Marshal(r)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(st.Changes)), "ns/change")
	})
}
