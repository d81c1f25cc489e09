package scenarios

import (
	"fmt"
	"testing"

	"github.com/cloudprofiler-go/cp/wire"
)

// BenchmarkPatch: what the emission loop pays per bucket to give it its
// sequence number, ids and intended time (issue 16's per-message budget),
// and with each tuple's time sealed, as in a trial of a job
// (wire.SealKey): the seal's cost a tuple is the difference over the
// bucket's tuples.
func BenchmarkPatch(b *testing.B) {
	s, err := Load("synthetic-100")
	if err != nil {
		b.Fatal(err)
	}
	enc, err := s.Generate()
	if err != nil {
		b.Fatal(err)
	}
	for _, sealed := range []bool{false, true} {
		for _, bucket := range []int{1, 100} {
			tpls, err := Templates(enc, 1, bucket)
			if err != nil {
				b.Fatal(err)
			}
			if sealed {
				for i := range tpls {
					tpls[i].Seal(wire.SealKey{3, 5})
				}
			}
			b.Run(fmt.Sprintf("bucket=%d/sealed=%v", bucket, sealed), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					tpls[i%len(tpls)].Patch(uint64(i), uint64(i)*uint64(bucket), int64(i))
				}
			})
		}
	}
}
