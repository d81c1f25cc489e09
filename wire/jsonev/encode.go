package jsonev

// Widths of the digit fields a sender patches: every value of the field
// fits, so a template's length never changes. Each is a JSON string of
// digits with leading zeros, which every language reads back exactly
// (a JSON number above 2^53 loses its last digits in JavaScript).
const (
	IDDigits       = 20 // a uint64
	IntendedDigits = 19 // Unix ns: every int64 that is not negative
	EventMsDigits  = 13 // Unix ms until the year 2286
)

// PutDigits writes v as len(b) decimal digits with leading zeros; the
// caller has made b wide enough (the widths above).
func PutDigits(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// Writer builds a flat JSON object field by field, remembering where its
// digit fields' digits are.
type Writer struct {
	buf []byte
}

// Bytes is the object so far (closed by End).
func (w *Writer) Bytes() []byte { return w.buf }

func (w *Writer) key(name string) {
	if len(w.buf) == 0 {
		w.buf = append(w.buf, '{')
	} else {
		w.buf = append(w.buf, ',')
	}
	w.buf = appendJSONString(w.buf, name)
	w.buf = append(w.buf, ':')
}

// String adds a string field (quoted as JSON needs).
func (w *Writer) String(name, value string) {
	w.key(name)
	w.buf = appendJSONString(w.buf, value)
}

// Raw adds a field whose value is already JSON.
func (w *Writer) Raw(name string, value []byte) {
	w.key(name)
	w.buf = append(w.buf, value...)
}

// Digits adds a string field of width zeros and returns the offset of its
// first digit, for PutDigits.
func (w *Writer) Digits(name string, width int) int {
	w.key(name)
	w.buf = append(w.buf, '"')
	at := len(w.buf)
	for range width {
		w.buf = append(w.buf, '0')
	}
	w.buf = append(w.buf, '"')
	return at
}

// End closes the object and returns it.
func (w *Writer) End() []byte {
	if len(w.buf) == 0 {
		w.buf = append(w.buf, '{')
	}
	return append(w.buf, '}')
}

// appendJSONString quotes s as a JSON string: strconv's Go quoting
// differs from JSON's for a few control and non-ASCII characters, so they
// are escaped here by JSON's rules.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
