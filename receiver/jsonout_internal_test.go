package receiver

import (
	"testing"

	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/wire"
)

// A JSON event becomes a bucket of one tuple under the lane's JSON
// stream: a map's by its identity, a window's by its key, end and count,
// timed by its latest event or its end when it carries no identity.
func TestJSONEventsBecomeTuples(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint, msg string
		id                  uint64
		intended, endMs     int64
		count               int64
		noID                bool
		from                string // what the window's latency is measured from
	}{
		{"a map's event", "jetstream://h:1/o?format=json", `{"x":1,"cp_id":"00000000000000000007","cp_intended_ns":"1700000000000000000"}`, 7, 1700000000000000000, 0, 0, false, ""},
		{"a window without identity", "jetstream://h:1/o?format=json&key=k&window_end=w&count=n", `{"k":"campaign-0001","w":1700000001000,"n":3}`, 0, 1700000001000 * 1e6, 1700000001000, 3, true, WindowFromEnd},
		{"a window with its latest event", "jetstream://h:1/o?format=json&key=k&window_end=w&count=n&latest=l", `{"k":"c","w":"1700000001000","n":3,"l":1700000000900}`, 0, 1700000000900 * 1e6, 1700000001000, 3, true, WindowFromLatest},
		{"a window by its start, with identity", "redis://h:1/o?format=json&key=k&window_start=w&window_size=10s&count=n", `{"k":"c","w":1700000000000,"n":3,"cp_id":9,"cp_intended_ns":5}`, 9, 5, 1700000010000, 3, false, WindowFromIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from windowBasis
			dec := jsonMessages(tc.endpoint, &from)
			if dec == nil {
				t.Fatalf("%s: no JSON decoder", tc.endpoint)
			}
			b := &objfactory.Bucket{Msg: []byte(tc.msg)}
			if err := dec(b); err != nil {
				t.Fatal(err)
			}
			tu := b.Tuples[0]
			if len(b.Tuples) != 1 || b.Header.Stream != jsonStream || b.Header.Kind != wire.KindData || b.Header.Count != 1 {
				t.Fatalf("bucket %+v with %d tuples", b.Header, len(b.Tuples))
			}
			if tu.ID != tc.id || tu.IntendedNs != tc.intended || tu.Window.EndMs != tc.endMs || tu.Window.Count != tc.count || tu.Window.NoIdentity != tc.noID {
				t.Fatalf("tuple %+v", tu)
			}
			if got := from.String(); got != tc.from {
				t.Fatalf("measured from %q, want %q", got, tc.from)
			}
			if n := testing.AllocsPerRun(200, func() { _ = dec(b) }); n != 0 {
				t.Fatalf("%v allocations an event", n)
			}
		})
	}
	if jsonMessages("jetstream://h:1/o", nil) != nil || jsonMessages("tcp://127.0.0.1:5555", nil) != nil {
		t.Fatal("a decoder for buckets")
	}
}
