package scenarios

import (
	"bytes"
	"reflect"
	"testing"
)

// agree checks that a fast-path decoder and the general one give the same
// tuple, offset and error verdict on b.
func agree(t *testing.T, name string, fast, generic Decoder, b []byte) {
	t.Helper()
	var a, g Tuple
	offA, errA := fast(b, 0, &a)
	offG, errG := generic(b, 0, &g)
	if (errA == nil) != (errG == nil) {
		t.Fatalf("%s: fast err %v, generic err %v on % x", name, errA, errG, b)
	}
	if errA == nil && (offA != offG || !reflect.DeepEqual(a, g)) {
		t.Fatalf("%s: fast %+v@%d, generic %+v@%d", name, a, offA, g, offG)
	}
}

func seeds(t testing.TB, scenario string) [][]byte {
	s, err := Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	s.Distinct = 16
	enc, _ := s.Generate()
	var out [][]byte
	for _, e := range enc {
		out = append(out, e.Bytes)
	}
	return out
}

// TestFastPathsAgreeWithGeneric mutates every byte of generated tuples and
// checks the fast paths never disagree with the general decoder.
func TestFastPathsAgreeWithGeneric(t *testing.T) {
	for _, tc := range []struct {
		scenario      string
		fast, generic Decoder
	}{
		{"ad-event", DecodeAdEvent, decodeAdEventGeneric},
		{"synthetic-100", DecodeSynthetic, decodeSyntheticGeneric},
		{"synthetic:400", DecodeSynthetic, decodeSyntheticGeneric},
	} {
		for _, b := range seeds(t, tc.scenario)[:4] {
			agree(t, tc.scenario, tc.fast, tc.generic, b)
			for i := range b {
				for _, v := range []byte{0x00, 0x7f, 0x90, 0xa3, 0xc4, 0xcf, 0xd3, 0xd9, 0xff, b[i] ^ 1} {
					m := bytes.Clone(b)
					m[i] = v
					agree(t, tc.scenario, tc.fast, tc.generic, m)
					agree(t, tc.scenario, tc.fast, tc.generic, m[:i])
				}
			}
		}
	}
}

func FuzzFastPathsAgree(f *testing.F) {
	for _, b := range seeds(f, "ad-event")[:2] {
		f.Add(b)
	}
	for _, b := range seeds(f, "synthetic-100")[:2] {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		agree(t, "ad-event", DecodeAdEvent, decodeAdEventGeneric, b)
		agree(t, "synthetic", DecodeSynthetic, decodeSyntheticGeneric, b)
	})
}
