package termsafe

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// control says whether r is a C0 or C1 control character or DEL.
func control(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// Escape returns s with every control character (newlines and tabs
// included) and every invalid UTF-8 byte shown as an escape.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if control(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case control(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Safe says whether s holds no control character and is valid UTF-8.
func Safe(s string) bool { return Escape(s) == s }

// writer passes text on with some characters escaped: escape says, of a
// character (its bytes b, its rune r, n bytes long; utf8.RuneError with n
// 1 for an invalid byte), what to write instead, or "" to pass it on.
type writer struct {
	mu      sync.Mutex // a command's goroutines share its standard error
	w       io.Writer
	pending []byte // the start of a UTF-8 sequence split across writes
	escape  func(b []byte, r rune, n int) string
}

// NewWriter returns a writer that passes text to w with every control
// character but newline and tab escaped (Escape): a command's whole output
// to a terminal goes through one, so that no string it read can drive the
// terminal.
func NewWriter(w io.Writer) io.Writer {
	return &writer{w: w, escape: func(b []byte, r rune, n int) string {
		if r == '\n' || r == '\t' || !(control(r) || r == utf8.RuneError && n <= 1) {
			return ""
		}
		return Escape(string(b))
	}}
}

// NewJSONWriter returns a writer for JSON text (as encoding/json writes
// it) that shows DEL and every C1 control (U+0080 to U+009F, the 8-bit CSI
// U+009B among them), which encoding/json passes through raw and a
// terminal may act on, as a \u escape: the same JSON value. They can stand
// only inside strings (JSON's own syntax is ASCII), where the escape means
// the same character.
func NewJSONWriter(w io.Writer) io.Writer {
	return &writer{w: w, escape: func(_ []byte, r rune, _ int) string {
		if r == 0x7f || r >= 0x80 && r <= 0x9f {
			return fmt.Sprintf(`\u%04x`, r)
		}
		return ""
	}}
}

func (t *writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := append(t.pending, p...)
	t.pending = nil
	// keep an incomplete sequence at the end for the next write
	if cut := incompleteTail(buf); cut > 0 {
		t.pending = append([]byte(nil), buf[len(buf)-cut:]...)
		buf = buf[:len(buf)-cut]
	}
	var b strings.Builder
	start := 0
	for i := 0; i < len(buf); {
		r, n := utf8.DecodeRune(buf[i:])
		if e := t.escape(buf[i:i+n], r, n); e != "" {
			b.Write(buf[start:i])
			b.WriteString(e)
			start = i + n
		}
		i += n
	}
	b.Write(buf[start:])
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// incompleteTail is the length of a UTF-8 sequence begun at the end of b
// and not finished (0: none).
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c&0xc0 == 0x80 {
			continue // a continuation byte: look further back
		}
		if c >= 0xc0 && !utf8.FullRune(b[len(b)-k:]) {
			return k
		}
		return 0
	}
	return 0
}
