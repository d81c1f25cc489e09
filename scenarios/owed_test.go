package scenarios

import (
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/wire"
)

// TestOwedFollowsTheTemplates: for bucket sizes that divide the distinct
// tuples and sizes that do not, Kept(q) says of the tuple with sequence q
// what the predicate says of the tuple the sender's templates put there,
// over several cycles of the templates.
func TestOwedFollowsTheTemplates(t *testing.T) {
	sc := &Scenario{Name: "owed", Schema: SchemaAdEvent, Seed: 7, Distinct: 37}
	p, err := ParsePredicate(SchemaAdEvent, "event_type == view")
	if err != nil {
		t.Fatal(err)
	}
	encoded, err := sc.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, bucket := range []int{1, 5, 37, 100} {
		o, err := sc.Owed(p, bucket)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("bucket %d: %v", bucket, err)
		}
		tpls, err := Templates(encoded, wire.StreamID(3, 1), bucket)
		if err != nil {
			t.Fatal(err)
		}
		kept, seq := 0, uint64(0)
		for cycle := 0; cycle < 3; cycle++ {
			for _, tpl := range tpls {
				if err := EachTuple(tpl.Msg, DecodeAdEvent, func(tu *Tuple) {
					if o.Kept(seq) != p.Match(tu) {
						t.Fatalf("bucket %d: tuple %d kept %v, the predicate says %v", bucket, seq, o.Kept(seq), p.Match(tu))
					}
					if o.Kept(seq) {
						kept++
					}
					seq++
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if kept == 0 || uint64(kept) == seq {
			t.Fatalf("bucket %d: %d of %d kept: the predicate should keep some and not all", bucket, kept, seq)
		}
	}
}

// TestOwedValidate: a pattern from the network that does not fit its own
// sizes is refused before Kept could index past it.
func TestOwedValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Owed
		want string
	}{
		{Owed{Items: 0, Bucket: 1}, "items"},
		{Owed{Items: MaxOwedItems + 1, Bucket: 1, Keep: make([]byte, (MaxOwedItems+8)/8)}, "items"},
		{Owed{Items: 9, Bucket: 0, Keep: make([]byte, 2)}, "bucket"},
		{Owed{Items: 9, Bucket: 1, Keep: make([]byte, 1)}, "bytes of bits"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}
