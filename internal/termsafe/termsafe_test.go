package termsafe

import (
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
