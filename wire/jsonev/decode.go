package jsonev

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of the values a decoder passes over: a
// hostile message cannot make it recurse without end.
const MaxDepth = 32

// Event is what a job's output event says, by the mapping.
type Event struct {
	// HasID: the event carries the identity (a map's or filter's always
	// does; a window's may).
	HasID      bool
	ID         uint64
	IntendedNs int64
	// A windowed count's: its key (the raw bytes of a JSON string, a
	// sub-slice of the message), its window's end in Unix ms, its count,
	// and the latest counted event's time (Unix ms; 0: not written).
	Key      []byte
	EndMs    int64
	Count    int64
	LatestMs int64
}

// Errors of the message as a whole; a field's problem is a *FieldError.
var (
	ErrNotObject = errors.New("not a JSON object")
	ErrSyntax    = errors.New("not valid JSON")
	ErrDepth     = fmt.Errorf("nested deeper than %d levels", MaxDepth)
)

// FieldError is a declared field missing from an event, or of the wrong
// type: named, so that the trial's failure says which.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Problem) }

// field bits: which declared fields an event had.
const (
	hasID = 1 << iota
	hasIntended
	hasKey
	hasWindow
	hasCount
	hasLatest
)

// Decode reads one event of a job's output by the mapping f into e. It
// allocates only for a window in RFC 3339 and on an error.
func Decode(msg []byte, f *Fields, e *Event) error {
	*e = Event{}
	i := skipWS(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return ErrNotObject
	}
	i = skipWS(msg, i+1)
	var seen uint8
	if i < len(msg) && msg[i] == '}' {
		i++
	} else {
		for {
			if i >= len(msg) || msg[i] != '"' {
				return ErrSyntax
			}
			ks, ke, _, next, err := scanString(msg, i)
			if err != nil {
				return err
			}
			if i = skipWS(msg, next); i >= len(msg) || msg[i] != ':' {
				return ErrSyntax
			}
			i = skipWS(msg, i+1)
			if i, err = f.value(msg, i, msg[ks:ke], e, &seen); err != nil {
				return err
			}
			i = skipWS(msg, i)
			if i < len(msg) && msg[i] == ',' {
				i = skipWS(msg, i+1)
				continue
			}
			if i < len(msg) && msg[i] == '}' {
				i++
				break
			}
			return ErrSyntax
		}
	}
	if skipWS(msg, i) != len(msg) {
		return ErrSyntax
	}
	return f.complete(seen, e)
}

// value reads the value at i of the field named key: a declared one into
// e, any other passed over.
func (f *Fields) value(msg []byte, i int, key []byte, e *Event, seen *uint8) (int, error) {
	var bit uint8
	var err error
	var name string // the declared field's
	switch {
	case string(key) == f.ID: // compared without a copy
		name, bit = f.ID, hasID
		e.ID, i, err = uintValue(msg, i)
	case string(key) == f.Intended:
		name, bit = f.Intended, hasIntended
		e.IntendedNs, i, err = intValue(msg, i, 1<<63-1)
	case f.Key != "" && string(key) == f.Key:
		name, bit = f.Key, hasKey
		var s, t int
		if i >= len(msg) || msg[i] != '"' {
			err = errWantString
			break
		}
		s, t, _, i, err = scanString(msg, i)
		e.Key = msg[s:t]
	case f.Window != "" && string(key) == f.Window:
		name, bit = f.Window, hasWindow
		e.EndMs, i, err = f.windowValue(msg, i)
		if err == nil && f.WindowStart {
			e.EndMs += f.Size.Milliseconds()
		}
	case f.Count != "" && string(key) == f.Count:
		name, bit = f.Count, hasCount
		e.Count, i, err = intValue(msg, i, 1<<47)
	case f.Latest != "" && string(key) == f.Latest:
		name, bit = f.Latest, hasLatest
		e.LatestMs, i, err = intValue(msg, i, 1<<62)
	default:
		return skipValue(msg, i, 0)
	}
	switch {
	case err == ErrSyntax:
		return i, err
	case err != nil:
		return i, &FieldError{Field: name, Problem: err.Error()}
	case *seen&bit != 0:
		return i, &FieldError{Field: name, Problem: "twice in one event"}
	}
	*seen |= bit
	return i, nil
}

// complete checks that every field the mapping needs was there: the
// identity's two for a map's or filter's output; for a window's, its key,
// window and count, and the identity's two or neither.
func (f *Fields) complete(seen uint8, e *Event) error {
	if f.Windowed() {
		if err := missing(seen, need{hasKey, f.Key}, need{hasWindow, f.Window}, need{hasCount, f.Count}); err != nil {
			return err
		}
		if seen&(hasID|hasIntended) == 0 {
			return nil
		}
	}
	if err := missing(seen, need{hasID, f.ID}, need{hasIntended, f.Intended}); err != nil {
		return err
	}
	e.HasID = true
	return nil
}

// need is a field an event must have: its bit and its name.
type need struct {
	bit  uint8
	name string
}

// missing names the first of the fields not seen.
func missing(seen uint8, fields ...need) error {
	for _, f := range fields {
		if seen&f.bit == 0 {
			return &FieldError{Field: f.name, Problem: "missing"}
		}
	}
	return nil
}

var (
	errWantString = errors.New("want a string")
	errWantNumber = errors.New("want a whole number, or a string of its digits")
	errRange      = errors.New("out of range")
)

// windowValue reads a window's time in the mapping's unit, as Unix ms.
func (f *Fields) windowValue(msg []byte, i int) (int64, int, error) {
	if f.Unit != UnitRFC3339 {
		return intValue(msg, i, 1<<62)
	}
	if i >= len(msg) || msg[i] != '"' {
		return 0, i, errWantString
	}
	s, t, esc, next, err := scanString(msg, i)
	if err != nil {
		return 0, next, err
	}
	if esc {
		return 0, next, errors.New("want an RFC 3339 time without escapes")
	}
	at, err := time.Parse(time.RFC3339Nano, string(msg[s:t]))
	if err != nil {
		return 0, next, fmt.Errorf("want an RFC 3339 time: %q", msg[s:t])
	}
	return at.UnixMilli(), next, nil
}

// intValue reads a whole number of at most most (uintValue).
func intValue(msg []byte, i int, most uint64) (int64, int, error) {
	v, next, err := uintValue(msg, i)
	if err == nil && v > most {
		err = errRange
	}
	return int64(v), next, err
}

// uintValue reads a whole number, written as a JSON number without sign,
// fraction or exponent, or as a string of its decimal digits (YSB writes
// its event times so; JavaScript keeps such ids exactly).
func uintValue(msg []byte, i int) (uint64, int, error) {
	quoted := i < len(msg) && msg[i] == '"'
	if quoted {
		i++
	}
	start := i
	var v uint64
	for ; i < len(msg) && msg[i] >= '0' && msg[i] <= '9'; i++ {
		d := uint64(msg[i] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, i, errRange
		}
		v = v*10 + d
	}
	if i == start {
		if i >= len(msg) {
			return 0, i, ErrSyntax
		}
		if quoted || !startsValue(msg, i) {
			return 0, i, errWantNumber
		}
		next, err := skipValue(msg, i, 0)
		if err != nil {
			return 0, next, err
		}
		return 0, next, errWantNumber
	}
	if quoted {
		if i >= len(msg) || msg[i] != '"' {
			return 0, i, errWantNumber
		}
		return v, i + 1, nil
	}
	if i < len(msg) && (msg[i] == '.' || msg[i] == 'e' || msg[i] == 'E') {
		return 0, i, errWantNumber
	}
	return v, i, nil
}

// startsValue says whether a JSON value may start at i.
func startsValue(msg []byte, i int) bool {
	if i >= len(msg) {
		return false
	}
	switch c := msg[i]; c {
	case '"', '{', '[', 't', 'f', 'n', '-':
		return true
	default:
		return c >= '0' && c <= '9'
	}
}

func skipWS(msg []byte, i int) int {
	for i < len(msg) && (msg[i] == ' ' || msg[i] == '\t' || msg[i] == '\n' || msg[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string whose opening quote is at i: its content
// is msg[start:end]; escaped says whether it holds a backslash escape.
func scanString(msg []byte, i int) (start, end int, escaped bool, next int, err error) {
	start = i + 1
	for j := start; j < len(msg); j++ {
		switch c := msg[j]; {
		case c == '"':
			return start, j, escaped, j + 1, nil
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return 0, 0, false, j, ErrSyntax
		}
	}
	return 0, 0, false, len(msg), ErrSyntax
}

// skipValue passes over the value at i.
func skipValue(msg []byte, i, depth int) (int, error) {
	if depth > MaxDepth {
		return i, ErrDepth
	}
	if i >= len(msg) {
		return i, ErrSyntax
	}
	switch c := msg[i]; {
	case c == '"':
		_, _, _, next, err := scanString(msg, i)
		return next, err
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipWS(msg, i+1)
		if i < len(msg) && msg[i] == closing {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(msg) || msg[i] != '"' {
					return i, ErrSyntax
				}
				if _, _, _, i, err = scanString(msg, i); err != nil {
					return i, err
				}
				if i = skipWS(msg, i); i >= len(msg) || msg[i] != ':' {
					return i, ErrSyntax
				}
				i = skipWS(msg, i+1)
			}
			if i, err = skipValue(msg, i, depth+1); err != nil {
				return i, err
			}
			i = skipWS(msg, i)
			if i < len(msg) && msg[i] == ',' {
				i = skipWS(msg, i+1)
				continue
			}
			if i < len(msg) && msg[i] == closing {
				return i + 1, nil
			}
			return i, ErrSyntax
		}
	case c == 't':
		return literal(msg, i, "true")
	case c == 'f':
		return literal(msg, i, "false")
	case c == 'n':
		return literal(msg, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		j := i
		if msg[j] == '-' {
			j++
		}
		start := j
		for j < len(msg) && (msg[j] >= '0' && msg[j] <= '9' || msg[j] == '.' || msg[j] == 'e' || msg[j] == 'E' || msg[j] == '+' || msg[j] == '-') {
			j++
		}
		if j == start {
			return j, ErrSyntax
		}
		return j, nil
	}
	return i, ErrSyntax
}

func literal(msg []byte, i int, word string) (int, error) {
	if len(msg)-i < len(word) || string(msg[i:i+len(word)]) != word {
		return i, ErrSyntax
	}
	return i + len(word), nil
}

// Member is one field of a JSON object: its name as written (without
// the quotes) and its value's raw JSON.
type Member struct {
	Key   string
	Value []byte
}

// Members are a JSON object's fields in their order (a user's event,
// before a run: it allocates).
func Members(msg []byte) ([]Member, error) {
	i := skipWS(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil, ErrNotObject
	}
	var out []Member
	i = skipWS(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		return out, trailing(msg, i+1)
	}
	for {
		if i >= len(msg) || msg[i] != '"' {
			return nil, ErrSyntax
		}
		ks, ke, _, next, err := scanString(msg, i)
		if err != nil {
			return nil, err
		}
		if i = skipWS(msg, next); i >= len(msg) || msg[i] != ':' {
			return nil, ErrSyntax
		}
		start := skipWS(msg, i+1)
		if i, err = skipValue(msg, start, 0); err != nil {
			return nil, err
		}
		out = append(out, Member{Key: string(msg[ks:ke]), Value: msg[start:i]})
		i = skipWS(msg, i)
		if i < len(msg) && msg[i] == ',' {
			i = skipWS(msg, i+1)
			continue
		}
		if i < len(msg) && msg[i] == '}' {
			return out, trailing(msg, i+1)
		}
		return nil, ErrSyntax
	}
}

// trailing says whether anything but white space follows i.
func trailing(msg []byte, i int) error {
	if skipWS(msg, i) != len(msg) {
		return ErrSyntax
	}
	return nil
}

// CheckText says whether msg is JSON text by RFC 8259 beyond its syntax:
// valid UTF-8, with no lone surrogate escaped in a string (\ud800 alone),
// which a JSON parser reads as a character that is not there.
func CheckText(msg []byte) error {
	if !utf8.Valid(msg) {
		for i := 0; i < len(msg); {
			r, n := utf8.DecodeRune(msg[i:])
			if r == utf8.RuneError && n <= 1 {
				return fmt.Errorf("byte %d is not UTF-8 (JSON text is UTF-8)", i+1)
			}
			i += n
		}
	}
	in := false
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; {
		case c == '"':
			in = !in
		case in && c == '\\' && i+1 < len(msg):
			if msg[i+1] != 'u' {
				i++
				continue
			}
			r, ok := hex4(msg, i+2)
			if !ok {
				return fmt.Errorf("byte %d: a \\u escape needs four hex digits", i+1)
			}
			switch {
			case r >= 0xd800 && r <= 0xdbff:
				low, ok := hex4(msg, i+8)
				if !ok || i+7 >= len(msg) || msg[i+6] != '\\' || msg[i+7] != 'u' || low < 0xdc00 || low > 0xdfff {
					return fmt.Errorf("byte %d: a lone surrogate (\\u%04x without its pair) is no character", i+1, r)
				}
				i += 11
			case r >= 0xdc00 && r <= 0xdfff:
				return fmt.Errorf("byte %d: a lone surrogate (\\u%04x without its pair) is no character", i+1, r)
			default:
				i += 5
			}
		}
	}
	return nil
}

// hex4 reads four hex digits at msg[i:].
func hex4(msg []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(msg) {
		return 0, false
	}
	var r rune
	for _, c := range msg[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Duplicate is the first key that members (an object's, Members) hold
// twice ("" when none): parsers disagree on which of the two counts.
func Duplicate(members []Member) string {
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		k := m.Key
		if strings.ContainsRune(k, '\\') { // an escaped key is the same key as its unescaped spelling
			var s string
			if json.Unmarshal([]byte(`"`+k+`"`), &s) == nil {
				k = s
			}
		}
		if seen[k] {
			return k
		}
		seen[k] = true
	}
	return ""
}
