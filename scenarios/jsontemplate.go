package scenarios

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/cloudprofiler-go/cp/wire"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// JSON event field names of an ad event: YSB's own, as its data generator
// writes them (the ids as UUID strings, the event time as a string of
// Unix ms).
const (
	FieldUserID    = "user_id"
	FieldPageID    = "page_id"
	FieldAdID      = "ad_id"
	FieldAdType    = "ad_type"
	FieldEventType = "event_type"
	FieldEventTime = "event_time"
	FieldIP        = "ip_address"
	FieldPayload   = "payload" // a synthetic tuple's payload, base64
)

// JSONTemplates makes the events of buckets of one tuple each (Templates
// with a bucket size of 1) as JSON events, one a message, in the same
// order: the same tuples, so that a predicate's matches and a join's keys
// counted on the buckets hold for the events. The identity goes in the
// mapping's two fields; Patch writes it, and an ad event's time, as
// digits in place.
func JSONTemplates(buckets []Template, schema string, f jsonev.Fields) ([]Template, error) {
	dec, ok := DecoderFor(schema)
	if !ok || schema == SchemaWindow || schema == SchemaRaw {
		return nil, fmt.Errorf("JSON events of the %s schema: only %s and %s tuples are sent as JSON", schema, SchemaAdEvent, SchemaSynthetic)
	}
	out := make([]Template, len(buckets))
	for i := range buckets {
		if buckets[i].count != 1 {
			return nil, fmt.Errorf("a JSON event is one tuple, the bucket holds %d", buckets[i].count)
		}
		var t Tuple
		if _, err := dec(buckets[i].Msg, wire.HeaderSize, &t); err != nil {
			return nil, fmt.Errorf("template %d: %w", i, err)
		}
		var w jsonev.Writer
		tpl := Template{count: 1, json: true, offs: make([]tupleOffs, 1)}
		if schema == SchemaAdEvent {
			a := &t.Ad
			w.String(FieldUserID, UUID(a.UserID))
			w.String(FieldPageID, UUID(a.PageID))
			w.String(FieldAdID, UUID(a.AdID))
			w.String(FieldAdType, string(a.AdType))
			w.String(FieldEventType, string(a.EventType))
			tpl.etOffs = []int32{int32(w.Digits(FieldEventTime, jsonev.EventMsDigits))}
			w.String(FieldIP, string(a.IP))
		} else {
			w.String(FieldPayload, base64.StdEncoding.EncodeToString(t.Payload))
		}
		tpl.offs[0].id = int32(w.Digits(f.ID, jsonev.IDDigits))
		tpl.offs[0].ts = int32(w.Digits(f.Intended, jsonev.IntendedDigits))
		tpl.Msg = w.End()
		out[i] = tpl
	}
	return out, nil
}

// UUID writes 16 bytes as a UUID (8-4-4-4-12 hex digits); any
// other length as plain hex.
func UUID(b []byte) string {
	h := hex.EncodeToString(b)
	if len(b) != 16 {
		return h
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// patchJSON writes an event's identity and times as digits. A template
// comes back every cycle of the scenario's events, its id and times a
// little higher: their last eight digits are written every time, the
// rest only when they changed. The event time is the intended time's, not
// its sealed form's.
func (t *Template) patchJSON(id uint64, sealedNs, intendedNs int64) {
	m, o := t.Msg, t.offs[0]
	t.hi[0] = putChanged(m[o.id:o.id+jsonev.IDDigits], id, t.hi[0])
	t.hi[1] = putChanged(m[o.ts:o.ts+jsonev.IntendedDigits], uint64(sealedNs), t.hi[1])
	for _, off := range t.etOffs { // one at most
		t.hi[2] = putChanged(m[off:off+jsonev.EventMsDigits], uint64(intendedNs/1e6), t.hi[2])
	}
}

// putChanged writes v's last eight digits into b's, and the digits above
// them when they differ from hi, what b holds there; it returns them.
func putChanged(b []byte, v, hi uint64) uint64 {
	const low = 100_000_000
	n := len(b) - 8
	jsonev.PutDigits(b[n:], v%low)
	if h := v / low; h != hi {
		jsonev.PutDigits(b[:n], h)
		return h
	}
	return hi
}

// JSON says whether the template is a JSON event.
func (t *Template) JSON() bool { return t.json }
