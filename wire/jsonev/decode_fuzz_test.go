package jsonev

import (
	"encoding/json"
	"testing"
)

// Any bytes: Decode never panics, and what it accepts is valid JSON.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"cp_id":"1","cp_intended_ns":2}`, `{"k":"c","w":"2023-11-14T22:13:20Z","n":3}`, `{"a":[{"b":"\"}"}]}`, `[`, `{"cp_id":1e5}`} {
		f.Add([]byte(s))
	}
	ident := Defaults()
	win := Defaults()
	win.Key, win.Window, win.Count, win.Unit = "k", "w", "n", UnitRFC3339
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, m := range []*Fields{&ident, &win} {
			var e Event
			if Decode(msg, m, &e) == nil && !json.Valid(msg) {
				t.Fatalf("accepted invalid JSON %q", msg)
			}
		}
	})
}
