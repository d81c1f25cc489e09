package scenarios_test

import (
	"testing"

	"github.com/cloudprofiler-go/cp/scenarios"
)

// TestCampaignsCountABucket: a bucket's per-campaign counts add up to its
// tuples (no filter) or to what the filter keeps, each campaign once and
// in order; a tuple whose ad is none of the scenario's is an error.
func TestCampaignsCountABucket(t *testing.T) {
	sc, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	join, err := sc.Join()
	if err != nil || join.Len() != sc.Campaigns {
		t.Fatalf("join: %v, %d campaigns", err, join.Len())
	}
	enc, err := sc.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := scenarios.Templates(enc, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	views, err := scenarios.ParsePredicate(sc.Schema, "event_type == view")
	if err != nil {
		t.Fatal(err)
	}
	for i, tpl := range tpls[:3] {
		for _, p := range []*scenarios.Predicate{nil, views} {
			kc, err := join.Count(tpl.Msg, p)
			if err != nil {
				t.Fatal(err)
			}
			want := 100
			if p != nil {
				want, _ = p.Matches(tpl.Msg)
			}
			n := 0
			for j, c := range kc {
				n += int(c.N)
				if c.Campaign < 0 || int(c.Campaign) >= join.Len() || (j > 0 && c.Campaign <= kc[j-1].Campaign) || c.N == 0 {
					t.Errorf("template %d: %+v", i, kc)
				}
			}
			if n != want {
				t.Errorf("template %d (filter %v): %d counted, want %d", i, p != nil, n, want)
			}
		}
	}
	other := *sc
	other.Seed++
	otherJoin, err := other.Join()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otherJoin.Count(tpls[0].Msg, nil); err == nil {
		t.Error("a bucket of another scenario's ads was counted")
	}
	if _, err := (&scenarios.Scenario{Name: "synthetic-100"}).Join(); err == nil {
		t.Error("a scenario without ads has a join")
	}
}
