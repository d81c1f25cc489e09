package jsonev

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodeByTheMapping(t *testing.T) {
	ident := Defaults()
	win := Defaults()
	for _, kv := range [][2]string{{"key", "campaign_id"}, {"window_end", "window_end"}, {"count", "count"}, {"latest", "latest_ms"}} {
		if err := win.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	start := win
	start.WindowStart, start.Unit, start.Size = true, UnitRFC3339, 10*time.Second
	for _, tc := range []struct {
		name string
		f    Fields
		msg  string
		want Event
		err  string
	}{
		{"a map's event, ids as strings", ident, `{"user_id":"u","cp_id":"00000000000000000042","cp_intended_ns":"1700000000000000000","x":[1,{"a":null}]}`,
			Event{HasID: true, ID: 42, IntendedNs: 1700000000000000000}, ""},
		{"ids as numbers, spaces", ident, " { \"cp_intended_ns\" : 5 ,\n\"cp_id\": 18446744073709551615 } ", Event{HasID: true, ID: 1<<64 - 1, IntendedNs: 5}, ""},
		{"renamed identity", Fields{ID: "id", Intended: "t", Unit: UnitMs}, `{"id":"7","t":8}`, Event{HasID: true, ID: 7, IntendedNs: 8}, ""},
		{"a window by its end, no identity", win, `{"campaign_id":"c-1","window_end":"1700000001000","count":12}`, Event{Key: []byte("c-1"), EndMs: 1700000001000, Count: 12}, ""},
		{"a window with its latest event and identity", win, `{"campaign_id":"c","window_end":1000,"count":1,"latest_ms":990,"cp_id":3,"cp_intended_ns":"4"}`,
			Event{HasID: true, ID: 3, IntendedNs: 4, Key: []byte("c"), EndMs: 1000, Count: 1, LatestMs: 990}, ""},
		{"a window by its start in RFC 3339", start, `{"campaign_id":"c","window_end":"2023-11-14T22:13:20Z","count":2}`, Event{Key: []byte("c"), EndMs: 1700000000000 + 10000, Count: 2}, ""},
		{"identity missing", ident, `{"cp_id":"1"}`, Event{}, `field "cp_intended_ns": missing`},
		{"half an identity on a window", win, `{"campaign_id":"c","window_end":1,"count":1,"cp_id":"1"}`, Event{}, `field "cp_intended_ns": missing`},
		{"count missing", win, `{"campaign_id":"c","window_end":1}`, Event{}, `field "count": missing`},
		{"count a string of letters", win, `{"campaign_id":"c","window_end":1,"count":"many"}`, Event{}, `field "count": want a whole number`},
		{"count a fraction", win, `{"campaign_id":"c","window_end":1,"count":1.5}`, Event{}, `field "count": want a whole number`},
		{"count negative", win, `{"campaign_id":"c","window_end":1,"count":-1}`, Event{}, `field "count": want a whole number`},
		{"count an object", win, `{"campaign_id":"c","window_end":1,"count":{"n":1}}`, Event{}, `field "count": want a whole number`},
		{"key a number", win, `{"campaign_id":3,"window_end":1,"count":1}`, Event{}, `field "campaign_id": want a string`},
		{"id too large", ident, `{"cp_id":18446744073709551616,"cp_intended_ns":1}`, Event{}, `field "cp_id": out of range`},
		{"intended beyond int64", ident, `{"cp_id":1,"cp_intended_ns":9223372036854775808}`, Event{}, `field "cp_intended_ns": out of range`},
		{"twice", ident, `{"cp_id":1,"cp_id":2,"cp_intended_ns":1}`, Event{}, `field "cp_id": twice`},
		{"not JSON", ident, `hello`, Event{}, "not a JSON object"},
		{"an array", ident, `[1,2]`, Event{}, "not a JSON object"},
		{"cut short", ident, `{"cp_id":1,"cp_intended_ns":`, Event{}, "not valid JSON"},
		{"trailing bytes", ident, `{"cp_id":1,"cp_intended_ns":2}x`, Event{}, "not valid JSON"},
		{"bad RFC 3339", start, `{"campaign_id":"c","window_end":"yesterday","count":2}`, Event{}, `want an RFC 3339 time`},
		{"too deep", ident, `{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, Event{}, "nested deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e Event
			err := Decode([]byte(tc.msg), &tc.f, &e)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.HasID != tc.want.HasID || e.ID != tc.want.ID || e.IntendedNs != tc.want.IntendedNs || string(e.Key) != string(tc.want.Key) ||
				e.EndMs != tc.want.EndMs || e.Count != tc.want.Count || e.LatestMs != tc.want.LatestMs {
				t.Fatalf("got %+v, want %+v", e, tc.want)
			}
		})
	}
}

func TestAFieldErrorNamesTheField(t *testing.T) {
	f := Defaults()
	var e Event
	err := Decode([]byte(`{"cp_id":true,"cp_intended_ns":1}`), &f, &e)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "cp_id" {
		t.Fatalf("%v: want a FieldError naming cp_id", err)
	}
}

func TestMappingChecks(t *testing.T) {
	for _, tc := range []struct {
		opts [][2]string
		err  string
	}{
		{nil, ""},
		{[][2]string{{"key", "k"}, {"window_end", "w"}, {"count", "c"}}, ""},
		{[][2]string{{"key", "k"}, {"count", "c"}}, "names key, window_end (or window_start) and count together"},
		{[][2]string{{"latest", "l"}}, "belong to a windowed count"},
		{[][2]string{{"key", "cp_id"}, {"window_end", "w"}, {"count", "c"}}, `"cp_id" is both id and key`},
		{[][2]string{{"id", "a b"}}, "a field name is"},
		{[][2]string{{"window_unit", "s"}}, "want ms or rfc3339"},
	} {
		f := Defaults()
		var err error
		for _, kv := range tc.opts {
			if err = f.Set(kv[0], kv[1]); err != nil {
				break
			}
		}
		if err == nil {
			err = f.Check()
		}
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: %v, want %q", tc.opts, err, tc.err)
		}
	}
}

// A template's digits are patched in place and the result is JSON that
// encoding/json reads back to the same values.
func TestWriterAndDigits(t *testing.T) {
	var w Writer
	w.String("ad_type", "ba\"n\x01")
	id := w.Digits("cp_id", IDDigits)
	at := w.Digits("cp_intended_ns", IntendedDigits)
	msg := w.End()
	PutDigits(msg[id:id+IDDigits], 1<<64-1)
	PutDigits(msg[at:at+IntendedDigits], 1700000000123456789)
	var back map[string]string
	if err := json.Unmarshal(msg, &back); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if back["cp_id"] != "18446744073709551615" || back["cp_intended_ns"] != "1700000000123456789" || back["ad_type"] != "ba\"n\x01" {
		t.Fatalf("read back %q from %s", back, msg)
	}
	f := Defaults()
	var e Event
	if err := Decode(msg, &f, &e); err != nil || e.ID != 1<<64-1 || e.IntendedNs != 1700000000123456789 {
		t.Fatalf("%+v %v", e, err)
	}
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	f := Defaults()
	msg := []byte(`{"user_id":"8c2d9b8e-0000-4000-8000-000000000000","ad_type":"banner","event_type":"view","event_time":"1700000000000","ip_address":"1.2.3.4","cp_id":"00000000000000000042","cp_intended_ns":"1700000000000000000"}`)
	var e Event
	if n := testing.AllocsPerRun(1000, func() {
		if err := Decode(msg, &f, &e); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations a decode", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	f := Defaults()
	msg := []byte(`{"user_id":"8c2d9b8e-0000-4000-8000-000000000000","page_id":"8c2d9b8e-0000-4000-8000-000000000001","ad_id":"8c2d9b8e-0000-4000-8000-000000000002","ad_type":"banner","event_type":"view","event_time":"1700000000000","ip_address":"1.2.3.4","cp_id":"00000000000000000042","cp_intended_ns":"1700000000000000000"}`)
	var e Event
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := Decode(msg, &f, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPutDigits(t *testing.T) {
	for _, tc := range []struct {
		v     uint64
		width int
		want  string
	}{{0, 3, "000"}, {7, 1, "7"}, {42, 5, "00042"}, {1<<64 - 1, 20, "18446744073709551615"}, {1700000000123, 13, "1700000000123"}, {9, 2, "09"}, {123456789, 19, "0000000000123456789"}} {
		b := make([]byte, tc.width)
		PutDigits(b, tc.v)
		if string(b) != tc.want {
			t.Errorf("PutDigits(%d, %d) = %s, want %s", tc.v, tc.width, b, tc.want)
		}
	}
}
