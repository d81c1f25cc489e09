package scenarios

import (
	"strings"
	"testing"
)

// TestPredicate: clauses are read and evaluated as declared, and a field
// or value the scenario cannot produce is refused with what it can.
func TestPredicate(t *testing.T) {
	view := &Tuple{Ad: AdEvent{EventType: []byte("view"), AdType: []byte("banner")}}
	click := &Tuple{Ad: AdEvent{EventType: []byte("click"), AdType: []byte("mail")}}
	for _, tc := range []struct {
		expr        string
		view, click bool
	}{
		{"event_type == view", true, false},
		{`event_type != "view"`, false, true},
		{"event_type == view && ad_type == banner", true, false},
		{"event_type == view && ad_type != banner", false, false},
		{"ad_type=='mail'", false, true},
	} {
		p, err := ParsePredicate(SchemaAdEvent, tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if p.Match(view) != tc.view || p.Match(click) != tc.click {
			t.Errorf("%s: view %v click %v, want %v %v", tc.expr, p.Match(view), p.Match(click), tc.view, tc.click)
		}
	}
	for expr, want := range map[string]string{
		"event_type == watch": "one of view, click, purchase",
		"user_id == x":        "want ad_type or event_type",
		"event_type":          "not FIELD == VALUE",
		"":                    "not FIELD == VALUE",
	} {
		if _, err := ParsePredicate(SchemaAdEvent, expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", expr, err, want)
		}
	}
	if _, err := ParsePredicate(SchemaSynthetic, "event_type == view"); err == nil {
		t.Error("a predicate over synthetic tuples was accepted")
	}
}

// TestPredicateMatchesABucket: the count over a template is the count of
// its tuples, decoded one by one.
func TestPredicateMatchesABucket(t *testing.T) {
	s, err := Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tpls, err := Templates(enc, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ParsePredicate(SchemaAdEvent, "event_type == view")
	total := 0
	for _, tpl := range tpls {
		n, err := p.Matches(tpl.Msg)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	want := 0
	for i := range len(tpls) * 100 {
		var tp Tuple
		if _, err := DecodeAdEvent(enc[i%len(enc)].Bytes, 0, &tp); err != nil {
			t.Fatal(err)
		}
		if string(tp.Ad.EventType) == "view" {
			want++
		}
	}
	if total != want || total == 0 {
		t.Errorf("%d views in the templates, %d by decoding each tuple", total, want)
	}
}
