package scenarios

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cloudprofiler-go/cp/wire"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// An ad event as JSON has YSB's field names and types, the same content
// as its bucket, and its identity and times patched as digits.
func TestJSONTemplatesAreYSBEvents(t *testing.T) {
	s, err := Load(SchemaAdEvent)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	buckets, err := Templates(enc[:50], 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := jsonev.Defaults()
	f.ID = "eid"
	events, err := JSONTemplates(buckets, SchemaAdEvent, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		const intended = 1700000000123456789
		id := wire.TupleID(3, uint64(i))
		events[i].Patch(0, id, intended)
		buckets[i].Patch(0, id, intended)
		var ev map[string]any
		if err := json.Unmarshal(events[i].Msg, &ev); err != nil {
			t.Fatalf("%s: %v", events[i].Msg, err)
		}
		var tu Tuple
		if _, err := DecodeAdEvent(buckets[i].Msg, wire.HeaderSize, &tu); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"user_id": UUID(tu.Ad.UserID), "page_id": UUID(tu.Ad.PageID), "ad_id": UUID(tu.Ad.AdID),
			"ad_type": string(tu.Ad.AdType), "event_type": string(tu.Ad.EventType), "event_time": "1700000000123", "ip_address": string(tu.Ad.IP),
			"eid": pad20(id), "cp_intended_ns": "1700000000123456789"}
		if len(ev) != len(want) {
			t.Fatalf("event %s: %d fields, want %d", events[i].Msg, len(ev), len(want))
		}
		for k, v := range want {
			if ev[k] != v {
				t.Fatalf("event %s: %s is %v, want %v", events[i].Msg, k, ev[k], v)
			}
		}
		var back jsonev.Event
		if err := jsonev.Decode(events[i].Msg, &f, &back); err != nil || back.ID != id || back.IntendedNs != intended {
			t.Fatalf("read back %+v %v", back, err)
		}
	}
	// a template patched again and again, its high digits moving or not,
	// reads back what it was last given
	for _, v := range []struct {
		id uint64
		ns int64
	}{{5, 1700000000123456789}, {100000007, 1700000000123456790}, {100000008, 1700000001000000000}, {1<<64 - 1, 9e18}, {3, 1}} {
		events[7].Patch(0, v.id, v.ns)
		var back jsonev.Event
		if err := jsonev.Decode(events[7].Msg, &f, &back); err != nil || back.ID != v.id || back.IntendedNs != v.ns {
			t.Fatalf("patched %+v, read back %+v %v (%s)", v, back, err, events[7].Msg)
		}
		var ev map[string]any
		if err := json.Unmarshal(events[7].Msg, &ev); err != nil || ev["event_time"] != pad20(uint64(v.ns / 1e6))[7:] {
			t.Fatalf("event time %v for %d (%v)", ev["event_time"], v.ns, err)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { events[7].Patch(0, 99, 1) }); n != 0 {
		t.Fatalf("a JSON patch allocates %v times", n)
	}
}

func pad20(v uint64) string {
	b := make([]byte, jsonev.IDDigits)
	jsonev.PutDigits(b, v)
	return string(b)
}

func BenchmarkPatchJSON(b *testing.B) {
	s, _ := Load(SchemaAdEvent)
	enc, _ := s.Generate()
	buckets, _ := Templates(enc[:1], 1, 1)
	events, err := JSONTemplates(buckets, SchemaAdEvent, jsonev.Defaults())
	if err != nil {
		b.Fatal(err)
	}
	for _, sealed := range []bool{false, true} {
		if sealed {
			events[0].Seal(wire.SealKey{3, 5})
		}
		b.Run(fmt.Sprintf("sealed=%v", sealed), func(b *testing.B) {
			b.ReportAllocs()
			var id uint64
			for b.Loop() {
				id++
				events[0].Patch(0, id, 1700000000123456789)
			}
		})
	}
}
