package receiver

import (
	"testing"

	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/wire"
)

// TestIdentitiesBudget: identities beyond the budget's pages are counted
// as unchecked (and taken, so that the counts still add up), never
// allocated.
func TestIdentitiesBudget(t *testing.T) {
	ids := newIdentities(1, 2, nil)
	ids.pages = maxIdentityPages - 1
	if !ids.take(wire.TupleID(wire.StreamID(0, 1), 5)) || ids.pages != maxIdentityPages {
		t.Fatalf("the last page: pages %d", ids.pages)
	}
	far := wire.TupleID(wire.StreamID(0, 1), 3*idPageBits)
	for range 2 { // twice: beyond the budget a repeat cannot be told
		if !ids.take(far) {
			t.Fatal("an identity beyond the budget is taken (unchecked)")
		}
	}
	res := ids.results()
	if len(res) != 1 || res[0].Stream != 1 || res[0].Unchecked != 2 || res[0].Distinct != 1 || res[0].Duplicates != 0 {
		t.Errorf("%+v", res)
	}
	if tally.MaxIdentities/idPageBits != maxIdentityPages || maxIdentityPages*len(idPage{})*8 != 64<<20 {
		t.Errorf("the budget is %d pages, want 64 MiB", maxIdentityPages)
	}
}

// TestIdentitiesTakeDoesNotAllocate: marking identities allocates only
// when a stream enters a new page of 65,536 identities.
func TestIdentitiesTakeDoesNotAllocate(t *testing.T) {
	ids := newIdentities(2, 2, nil)
	seq := uint64(0)
	ids.take(wire.TupleID(wire.StreamID(1, 1), seq))
	allocs := testing.AllocsPerRun(10_000, func() {
		seq++
		ids.take(wire.TupleID(wire.StreamID(1, 1), seq))
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations an identity", allocs)
	}
}

// BenchmarkIdentitiesTake is the consumer's cost per tuple of a map's
// output judged per identity.
func BenchmarkIdentitiesTake(b *testing.B) {
	ids := newIdentities(1, 1, nil)
	b.ReportAllocs()
	for i := range b.N {
		ids.take(uint64(i))
	}
}
