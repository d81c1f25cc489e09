package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"receiver0", "receiver0"},
		{"naïve→", "naïve→"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`},
		{"line\nforged: ok", `line\nforged: ok`},
		{"over\rwrite", `over\rwrite`},
		{"c1\u009bx", `c1\u009bx`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"del\x7f", `del\x7f`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if !Safe(Escape(c.in)) {
			t.Errorf("Escape(%q) is not safe", c.in)
		}
	}
}

func TestWriterKeepsLinesAndEscapesTheRest(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	// a multi-byte rune split across two writes passes whole
	parts := []string{"node \x1b[31mred\x1b[0m\n", "tab\there\r\n", "arrow \xe2", "\x86\x92 done\n"}
	for _, p := range parts {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	want := "node \\x1b[31mred\\x1b[0m\ntab\there\\r\narrow → done\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("a\x1b]0;x\x07\n\r\xff")
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if !Safe(e) {
			t.Fatalf("Escape(%q) = %q still has control characters", s, e)
		}
		var b strings.Builder
		NewWriter(&b).Write([]byte(s))
		for _, r := range b.String() {
			if control(r) && r != '\n' && r != '\t' {
				t.Fatalf("the writer passed %q through for %q", r, s)
			}
		}
	})
}

// TestJSONWriterEscapesWhatEncodingJSONPassesRaw: DEL and the C1
// controls (the 8-bit CSI among them), even split across writes, come
// out as \u escapes, and the text decodes to the same value.
func TestJSONWriterEscapesWhatEncodingJSONPassesRaw(t *testing.T) {
	in := map[string]string{"dir": "a\u009b31mred\u007f\u0085é\u001b"}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := NewJSONWriter(&out)
	for i := range raw { // a byte at a time: sequences split across writes
		if _, err := w.Write(raw[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if strings.ContainsAny(out.String(), "\u009b\u007f\u0085\x1b") || !strings.Contains(out.String(), `\u009b31mred\u007f\u0085é\u001b`) {
		t.Errorf("%q", out.String())
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["dir"] != in["dir"] {
		t.Errorf("decoded %q, %v; want %q", back["dir"], err, in["dir"])
	}
}
