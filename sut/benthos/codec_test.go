package benthos

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire"
)

// bucketOf encodes tuples of the scenario's pool as one bucket of stream 3.
func bucketOf(t *testing.T, name string, n int) []byte {
	t.Helper()
	s, err := scenarios.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, wire.HeaderSize)
	for i := range n {
		e := pool[i%len(pool)]
		tuple := append([]byte(nil), e.Bytes...)
		wire.PatchFixed(tuple, e.IDOff, wire.TupleID(3, uint64(i)))
		wire.PatchFixed(tuple, e.IntendedOff, uint64(1_800_000_000_000_000_000+i))
		if e.EventTimeOff >= 0 {
			wire.PatchFixed(tuple, e.EventTimeOff, uint64(1_800_000_000_000+i))
		}
		b = append(b, tuple...)
	}
	wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: 3, Seq: 7, Count: uint32(n), BodyLen: uint32(len(b) - wire.HeaderSize)})
	return b
}

// TestBucketRoundTrip: a bucket becomes one message per tuple with its
// identity, and cp_output's encoding of those messages is the bucket's
// body again, byte for byte (ad events, synthetic and raw tuples).
func TestBucketRoundTrip(t *testing.T) {
	for _, tc := range []struct{ scenario, schema string }{
		{"ad-event", scenarios.SchemaAdEvent},
		{"synthetic-100", scenarios.SchemaSynthetic},
		{"ad-event", scenarios.SchemaRaw},
	} {
		in := bucketOf(t, tc.scenario, 50)
		decode, _ := scenarios.DecoderFor(tc.schema)
		batch, err := decodeBucket(in, tc.schema, decode, nil)
		if err != nil || len(batch) != 50 {
			t.Fatalf("%s/%s: %d messages, %v", tc.scenario, tc.schema, len(batch), err)
		}
		id, intended, err := identity(batch[9])
		if err != nil || id != wire.TupleID(3, 9) || intended != 1_800_000_000_000_000_009 {
			t.Errorf("%s/%s: tuple 9's identity %x %d %v", tc.scenario, tc.schema, id, intended, err)
		}
		var body []byte
		for _, m := range batch {
			if body, err = appendTuple(body, m, tc.schema); err != nil {
				t.Fatalf("%s/%s: %v", tc.scenario, tc.schema, err)
			}
		}
		if !bytes.Equal(body, in[wire.HeaderSize:]) {
			t.Errorf("%s/%s: the tuples re-encode to other bytes", tc.scenario, tc.schema)
		}
	}
}

// TestOutputRefusesWhatBreaksTheContract: a message without the identity
// cp_input gave it, an ad event with a bad id, and a window with a
// negative count are errors, each naming what is wrong.
func TestOutputRefusesWhatBreaksTheContract(t *testing.T) {
	plain := service.NewMessage([]byte("x"))
	badAd := service.NewMessage(nil)
	badAd.MetaSetMut(MetaTupleID, uint64(1))
	badAd.MetaSetMut(MetaIntendedNs, int64(2))
	badAd.SetStructuredMut(map[string]any{FieldUserID: "zz", FieldPageID: "", FieldAdID: "", FieldAdType: "banner", FieldEventType: "view", FieldEventTime: int64(1), FieldIP: "1.2.3.4"})
	badWindow := service.NewMessage(nil)
	badWindow.MetaSetMut(MetaTupleID, uint64(1))
	badWindow.MetaSetMut(MetaIntendedNs, int64(2))
	badWindow.SetStructuredMut(map[string]any{FieldKey: "c", FieldWindowEnd: int64(1000), FieldCount: int64(-1)})
	stringID := service.NewMessage([]byte("x"))
	stringID.MetaSetMut(MetaTupleID, "1")
	stringID.MetaSetMut(MetaIntendedNs, int64(2))
	for _, tc := range []struct {
		name   string
		m      *service.Message
		schema string
		want   string
	}{
		{"no identity", plain, scenarios.SchemaSynthetic, "no tuple identity"},
		{"identity of the wrong type", stringID, scenarios.SchemaSynthetic, "want uint64/int64"},
		{"a bad ad id", badAd, scenarios.SchemaAdEvent, "user_id"},
		{"a negative count", badWindow, scenarios.SchemaWindow, "window"},
	} {
		if _, err := appendTuple(nil, tc.m, tc.schema); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// TestWindowEncodes: a window's tuple decodes, with the receiver's
// decoder, to its key, end, count and identity.
func TestWindowEncodes(t *testing.T) {
	m := service.NewMessage(nil)
	m.MetaSetMut(MetaTupleID, uint64(42))
	m.MetaSetMut(MetaIntendedNs, int64(1_800_000_000_000_000_000))
	m.SetStructuredMut(map[string]any{FieldKey: "campaign-0007", FieldWindowEnd: int64(1_800_000_001_000), FieldCount: 12})
	b, err := appendTuple(nil, m, scenarios.SchemaWindow)
	if err != nil {
		t.Fatal(err)
	}
	var tp scenarios.Tuple
	if _, err := scenarios.DecodeWindow(b, 0, &tp); err != nil {
		t.Fatal(err)
	}
	if tp.ID != 42 || tp.IntendedNs != 1_800_000_000_000_000_000 || string(tp.Window.Key) != "campaign-0007" || tp.Window.EndMs != 1_800_000_001_000 || tp.Window.Count != 12 {
		t.Errorf("decoded %+v", tp)
	}
}

// FuzzDecodeBucket: any bytes from the broker decode to messages or an
// error, never a panic, and a bucket that decodes re-encodes.
func FuzzDecodeBucket(f *testing.F) {
	f.Add(bucketOf(&testing.T{}, "ad-event", 3))
	f.Add([]byte("CP\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, schema := range []string{scenarios.SchemaAdEvent, scenarios.SchemaSynthetic, scenarios.SchemaRaw} {
			decode, _ := scenarios.DecoderFor(schema)
			batch, err := decodeBucket(b, schema, decode, nil)
			if err != nil {
				continue
			}
			for _, m := range batch {
				if _, err := appendTuple(nil, m, schema); err != nil && schema != scenarios.SchemaAdEvent {
					t.Fatalf("%s: a decoded tuple does not re-encode: %v", schema, err)
				}
			}
		}
	})
}
