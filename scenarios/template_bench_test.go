package scenarios

import "testing"

// BenchmarkPatch: what the emission loop pays per bucket to give it its
// sequence number, ids and intended time (issue 16's per-message budget).
func BenchmarkPatch(b *testing.B) {
	s, err := Load("synthetic-100")
	if err != nil {
		b.Fatal(err)
	}
	enc, err := s.Generate()
	if err != nil {
		b.Fatal(err)
	}
	for _, bucket := range []int{1, 100} {
		tpls, err := Templates(enc, 1, bucket)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[int]string{1: "bucket=1", 100: "bucket=100"}[bucket], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tpls[i%len(tpls)].Patch(uint64(i), uint64(i)*uint64(bucket), int64(i))
			}
		})
	}
}
