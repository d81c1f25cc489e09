package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

func writeEvents(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A user's events are sent as they are, less the fields the harness
// writes, with the time and the identity patched in place; the filter
// and the window's keys are taken from the events' own fields.
func TestAUsersEvents(t *testing.T) {
	path := writeEvents(t,
		`{"order":"o-1","shop":"north","kind":"view","amount":12.5,"tags":["a"],"ts":"old","cp_id":"x"}`,
		``,
		`{"order":"o-2","shop":"south","kind":"buy","amount":3,"nested":{"kind":"view"}}`,
		`  {"order":"o-3","shop":"north","kind":"view","paid":true}  `)
	s, err := LoadWith(EventsPrefix+path, EventsOptions{Time: "ts", Key: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Distinct != 3 || s.Schema != SchemaEvents {
		t.Fatalf("%d events of schema %s", s.Distinct, s.Schema)
	}
	tpls, err := EventTemplates(s, jsonev.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	tpls[0].Patch(0, 77, 1700000000123456789)
	var ev map[string]any
	if err := json.Unmarshal(tpls[0].Msg, &ev); err != nil {
		t.Fatalf("%s: %v", tpls[0].Msg, err)
	}
	if ev["order"] != "o-1" || ev["amount"] != 12.5 || ev["ts"] != "1700000000123" || ev["cp_id"] != "00000000000000000077" || ev["cp_intended_ns"] != "1700000000123456789" {
		t.Fatalf("event %s", tpls[0].Msg)
	}
	p, err := ParsePredicate(SchemaEvents, "kind == view && paid != true")
	if err != nil {
		t.Fatal(err)
	}
	var kept []int
	for i := range tpls {
		if n, err := p.Matches(tpls[i].Msg); err != nil {
			t.Fatal(err)
		} else if n == 1 {
			kept = append(kept, i)
		}
	}
	if len(kept) != 1 || kept[0] != 0 {
		t.Fatalf("the filter keeps events %v, want [0] (the nested kind is not the event's, o-3 is paid)", kept)
	}
	owed, err := s.Owed(p, 1)
	if err != nil || !owed.Kept(0) || owed.Kept(1) || owed.Kept(2) || !owed.Kept(3) {
		t.Fatalf("owed %+v %v", owed, err)
	}
	join, err := s.Join()
	if err != nil {
		t.Fatal(err)
	}
	if join.Len() != 2 || join.Name(0) != "north" || join.Name(1) != "south" {
		t.Fatalf("keys %d: %q %q", join.Len(), join.Name(0), join.Name(1))
	}
	kc, err := join.Count(tpls[2].Msg, nil)
	if err != nil || len(kc) != 1 || kc[0].Campaign != 0 || kc[0].N != 1 {
		t.Fatalf("o-3 counted %+v %v, want north once", kc, err)
	}
}

func TestBadEventsAreRefusedClearly(t *testing.T) {
	huge := `{"a":"` + strings.Repeat("x", MaxEventBytes) + `"}`
	for _, tc := range []struct {
		name  string
		lines []string
		o     EventsOptions
		err   string
	}{
		{"no events", []string{"", "  "}, EventsOptions{}, "no events"},
		{"not JSON", []string{`{"a":1}`, `hello`}, EventsOptions{}, "line 2 is not one JSON object"},
		{"an array", []string{`[1,2]`}, EventsOptions{}, "line 1 is not one JSON object"},
		{"an event over the limit", []string{huge}, EventsOptions{}, "line 1 is not one JSON object of at most 65536 bytes"},
		{"a key that is not a string", []string{`{"shop":"a"}`, `{"shop":3}`}, EventsOptions{Key: "shop"}, `event 2: the key field "shop" is not a string`},
		{"a key that is missing", []string{`{"x":"a"}`}, EventsOptions{Key: "shop"}, `event 1: the key field "shop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadEvents(writeEvents(t, tc.lines...), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%v, want %q", err, tc.err)
			}
		})
	}
	if _, err := LoadEvents(filepath.Join(t.TempDir(), "none"), EventsOptions{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing file: %v", err)
	}
	if _, err := LoadWith("ad-event", EventsOptions{Key: "k"}); err == nil {
		t.Fatal("event fields given with a built-in scenario")
	}
}

// A million distinct events fit the limits only when they are tiny; more
// than that is refused by count, and a file over the size limit by size.
func TestAMillionEvents(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxDistinct+1; i++ {
		b.WriteString("{}\n")
	}
	path := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadEvents(path, EventsOptions{}); err == nil || !strings.Contains(err.Error(), "more than 1048576 events") {
		t.Fatalf("%v", err)
	}
	big := strings.Repeat(`{"a":"`+strings.Repeat("x", 1000)+`"}`+"\n", MaxEventsBytes/1000+10)
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadEvents(path, EventsOptions{}); err == nil {
		t.Fatal("a file over the size limit was read")
	}
}

// TestEventsThatAreNotOneMeaning: text that is not UTF-8, a lone
// surrogate and a key given twice are refused, naming the line; a
// surrogate pair and escaped text pass.
func TestEventsThatAreNotOneMeaning(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"{\"k\":\"caf\xff\xfe\"}", "line 2: byte 10 is not UTF-8"},
		{`{"k":"\ud800"}`, `line 2: byte 7: a lone surrogate (\ud800`},
		{`{"k":"\udc00x"}`, "line 2: byte 7: a lone surrogate"},
		{`{"k":"\ud83d\u0041"}`, "a lone surrogate"},
		{`{"k":"c1","k":5}`, `line 2: the key "k" is given twice`},
		{`{"k":"c1","\u006b":5}`, `the key "k" is given twice`},
		{`{"k":"\ud83d\ude00 \"q\" \\u"}`, ""},
		{`{"k":{"a":1},"a":1}`, ""},
	} {
		path := filepath.Join(t.TempDir(), "e.jsonl")
		if err := os.WriteFile(path, []byte("{\"ok\":1}\n"+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadEvents(path, EventsOptions{})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.line, err, tc.want)
		}
	}
}
