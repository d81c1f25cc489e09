package scenarios

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cloudprofiler-go/cp/wire"
)

func TestLoadBuiltinsAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		schema  string
		wantErr string
	}{
		{"ad-event", SchemaAdEvent, ""},
		{"synthetic-100", SchemaSynthetic, ""},
		{"synthetic:64", SchemaSynthetic, ""},
		{"synthetic:10", "", "size must be between"},
		{"synthetic:abc", "", "must be a number"},
		{"no-such-scenario", "", "not a built-in"},
	} {
		s, err := Load(tc.name)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Load(%q) error = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || s.Schema != tc.schema {
			t.Errorf("Load(%q) = %+v, %v", tc.name, s, err)
		}
	}
}

func TestParseRejectsTyposAndBadSchema(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"schema: synthetic\nsize: 100\nsizee: 3\n", "line 3: an unknown setting"},
		{"schema: avro\n", "unknown schema"},
		{"size: 100\n", "schema is missing"},
		{"schema: [\n", "parse scenario"},
	} {
		if _, err := Parse([]byte(tc.yaml), "x.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestGenerateIsDeterministicAndSized(t *testing.T) {
	for _, name := range []string{"ad-event", "synthetic-100", "synthetic:21", "synthetic:300", "synthetic:70000"} {
		s, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		s.Distinct = 8
		a, err := s.Generate()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := s.Generate()
		for i := range a {
			if !bytes.Equal(a[i].Bytes, b[i].Bytes) {
				t.Fatalf("%s: tuple %d differs between two generations", name, i)
			}
			if s.Schema == SchemaSynthetic && len(a[i].Bytes) != s.Size {
				t.Fatalf("%s: tuple is %d bytes, want %d", name, len(a[i].Bytes), s.Size)
			}
		}
		if s.Schema == SchemaAdEvent && (len(a[0].Bytes) < 90 || len(a[0].Bytes) > 130) {
			t.Fatalf("ad event is %d bytes, expected ~110", len(a[0].Bytes))
		}
	}
}

// refAd is the ad event as a generic msgpack library sees it.
type refAd struct {
	//lint:ignore U1000 read by the reference codec through its tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`

	ID       uint64
	Intended int64
	UserID   []byte
	PageID   []byte
	AdID     []byte
	AdType   string
	Event    string
	EventMs  int64
	IP       string
}

// TestTemplateBytesMatchReferenceCodec patches a bucket and decodes it both
// with our decoder and with vmihailenco/msgpack (the reference), which must
// agree on every field.
func TestTemplateBytesMatchReferenceCodec(t *testing.T) {
	s, _ := Load("ad-event")
	s.Distinct = 10
	enc, _ := s.Generate()
	tpls, err := Templates(enc, wire.StreamID(3, 1), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(tpls) != 3 {
		t.Fatalf("%d templates for 10 tuples in buckets of 4, want 3", len(tpls))
	}
	tp := &tpls[1]
	const intended = 1_700_000_000_123_456_789
	tp.Patch(77, wire.TupleID(wire.StreamID(3, 1), 500), intended)
	h, err := wire.ParseHeader(tp.Msg)
	if err != nil || h.Seq != 77 || h.Count != 4 || h.Stream != wire.StreamID(3, 1) {
		t.Fatalf("header %+v, %v", h, err)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(tp.Msg[wire.HeaderSize:]))
	off := wire.HeaderSize
	for i := 0; i < 4; i++ {
		var ref refAd
		if err := dec.Decode(&ref); err != nil {
			t.Fatalf("reference decoder: %v", err)
		}
		var got Tuple
		if off, err = DecodeAdEvent(tp.Msg, off, &got); err != nil {
			t.Fatal(err)
		}
		wantID := wire.TupleID(wire.StreamID(3, 1), 500+uint64(i))
		if ref.ID != wantID || got.ID != wantID {
			t.Fatalf("tuple %d id ref=%x ours=%x want %x", i, ref.ID, got.ID, wantID)
		}
		if ref.Intended != intended || got.IntendedNs != intended || ref.EventMs != intended/1_000_000 || got.Ad.EventTimeMs != intended/1_000_000 {
			t.Fatalf("tuple %d times ref=%d/%d ours=%d/%d", i, ref.Intended, ref.EventMs, got.IntendedNs, got.Ad.EventTimeMs)
		}
		if !bytes.Equal(ref.UserID, got.Ad.UserID) || !bytes.Equal(ref.AdID, got.Ad.AdID) || ref.AdType != string(got.Ad.AdType) ||
			ref.Event != string(got.Ad.EventType) || ref.IP != string(got.Ad.IP) || len(got.Ad.PageID) != 16 {
			t.Fatalf("tuple %d fields differ: ref %+v ours %+v", i, ref, got.Ad)
		}
	}
	if off != len(tp.Msg) {
		t.Fatalf("decoder stopped at %d of %d bytes", off, len(tp.Msg))
	}
}

// TestDecodersAcceptForeignEncodings feeds tuples written by the reference
// encoder with its own (shortest) integer forms and extra trailing fields,
// as a Python or Java producer would.
func TestDecodersAcceptForeignEncodings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		value  []any
		decode Decoder
		check  func(Tuple) bool
	}{
		{"synthetic small ints", []any{uint64(5), int64(7), []byte("xyz")}, DecodeSynthetic,
			func(tp Tuple) bool { return tp.ID == 5 && tp.IntendedNs == 7 && string(tp.Payload) == "xyz" }},
		{"synthetic negative time, extra field", []any{uint64(1 << 40), int64(-3), []byte{}, map[string]int{"a": 1}}, DecodeSynthetic,
			func(tp Tuple) bool { return tp.ID == 1<<40 && tp.IntendedNs == -3 && len(tp.Payload) == 0 }},
		{"ad event with str ids", []any{uint64(9), int64(1e18), "uuuuuuuuuuuuuuuu", "pppppppppppppppp", "aaaaaaaaaaaaaaaa", "banner", "view", int64(1e12), "1.2.3.4", true}, DecodeAdEvent,
			func(tp Tuple) bool {
				return tp.ID == 9 && string(tp.Ad.AdType) == "banner" && tp.Ad.EventTimeMs == 1e12
			}},
		{"raw keeps the rest", []any{uint64(2), int64(3), "hello", []int{1, 2}}, DecodeRaw,
			func(tp Tuple) bool { return tp.ID == 2 && len(tp.Payload) == 6+3 }},
	} {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.UseCompactInts(true) // the shortest forms, as Python's msgpack writes them
		if err := enc.Encode(tc.value); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if id, _ := tc.value[0].(uint64); id < 1<<32 && (b[1] == 0xcf || b[1] == 0xd3) { // the id right after the array header
			t.Fatalf("%s: the reference wrote a 9-byte id (% x): not the shortest form", tc.name, b[:10])
		}
		var tp Tuple
		off, err := tc.decode(b, 0, &tp)
		if err != nil || off != len(b) || !tc.check(tp) {
			t.Errorf("%s: off=%d/%d err=%v tuple=%+v", tc.name, off, len(b), err, tp)
		}
	}
}

// TestAdEventFieldsAreValidated: the ids are 16 bytes, ad_type and
// event_type come from the YSB's lists; event_time_ms and the IP are
// opaque (docs/wire.md).
func TestAdEventFieldsAreValidated(t *testing.T) {
	id := []byte("0123456789abcdef")
	good := func() []any {
		return []any{uint64(1), int64(2), id, id, id, "mobile", "purchase", int64(-5), "not an ip"}
	}
	for _, tc := range []struct {
		name string
		edit func([]any)
		ok   bool
	}{
		{"valid, opaque time and ip", func([]any) {}, true},
		{"5-byte user_id", func(v []any) { v[2] = []byte("abcde") }, false},
		{"17-byte page_id", func(v []any) { v[3] = append([]byte("x"), id...) }, false},
		{"empty ad_id", func(v []any) { v[4] = []byte{} }, false},
		{"unknown ad_type", func(v []any) { v[5] = "popup" }, false},
		{"unknown event_type", func(v []any) { v[6] = "hover" }, false},
		{"event_time_ms a string", func(v []any) { v[7] = "1000" }, false},
	} {
		v := good()
		tc.edit(v)
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var tp Tuple
		if _, err := DecodeAdEvent(b, 0, &tp); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestDecodersRejectBadTuples(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any
	}{
		{"not an array", map[string]int{"id": 1}},
		{"too few fields", []any{uint64(1)}},
		{"negative id", []any{int64(-1), int64(0), []byte{}}},
		{"id is a string", []any{"1", int64(0), []byte{}}},
		{"payload is an int", []any{uint64(1), int64(0), 5}},
	} {
		b, _ := msgpack.Marshal(tc.value)
		var tp Tuple
		if _, err := DecodeSynthetic(b, 0, &tp); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
		if _, err := DecodeSynthetic(b[:len(b)-1], 0, &tp); err == nil {
			t.Errorf("%s truncated: accepted", tc.name)
		}
	}
}
