package jsonev

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Default names of the identity's two fields.
const (
	DefaultID       = "cp_id"
	DefaultIntended = "cp_intended_ns"
)

// Formats of a broker endpoint's messages.
const (
	FormatBucket = "bucket" // the wire format: a header and msgpack tuples (docs/wire.md)
	FormatJSON   = "json"   // one JSON event per message (this package)
)

// Window units.
const (
	UnitMs      = "ms"      // Unix milliseconds, a number or a string of digits
	UnitRFC3339 = "rfc3339" // a string, RFC 3339 with any fraction of a second
)

// Fields is the mapping of a JSON output's fields: which field is the
// identity, or for a windowed count which are its key, window and count.
type Fields struct {
	// ID and Intended hold the identity a sender put in each event (a
	// map's or filter's output carries them through; a window's may carry
	// its latest counted event's).
	ID, Intended string
	// Key, Window and Count make a windowed count: Key is a string field,
	// Window the window's end (or its start, WindowStart) in Unit, Count
	// a whole number (options key, window_end or window_start, count).
	// Latest, where the job writes it, is the latest
	// counted event's time in Unix ms.
	Key, Window, Count, Latest string
	WindowStart                bool
	// Size is the windows' size, which a window given by its start needs
	// (option window_size, a duration).
	Size time.Duration
	Unit string
}

// Defaults is the mapping with nothing declared.
func Defaults() Fields { return Fields{ID: DefaultID, Intended: DefaultIntended, Unit: UnitMs} }

// Windowed says whether the mapping declares a windowed count.
func (f Fields) Windowed() bool { return f.Key != "" }

// Options are the endpoint options that declare a mapping, in the order
// docs/brokers.md lists them.
var Options = []string{"id", "intended", "key", "window_end", "window_start", "window_size", "window_unit", "count", "latest"}

// Set applies one endpoint option (one of Options) to the mapping.
func (f *Fields) Set(option, value string) error {
	switch option {
	case "window_size":
		d, err := time.ParseDuration(value)
		if err != nil || d < time.Millisecond || d > time.Hour || d%time.Millisecond != 0 {
			return fmt.Errorf("window_size %q: want whole milliseconds from 1ms to 1h", value)
		}
		f.Size = d
		return nil
	case "window_unit":
		if value != UnitMs && value != UnitRFC3339 {
			return fmt.Errorf("window_unit %q: want %s or %s", value, UnitMs, UnitRFC3339)
		}
		f.Unit = value
		return nil
	}
	if !ValidName(value) {
		return fmt.Errorf("%s %q: a field name is 1 to 64 letters, digits, '_', '-' and '.'", option, value)
	}
	switch option {
	case "id":
		f.ID = value
	case "intended":
		f.Intended = value
	case "key":
		f.Key = value
	case "window_end", "window_start":
		if f.Window != "" {
			return fmt.Errorf("%s %q: the window is named once, by its end or its start", option, value)
		}
		f.Window, f.WindowStart = value, option == "window_start"
	case "count":
		f.Count = value
	case "latest":
		f.Latest = value
	default:
		return fmt.Errorf("%s is not a field option (%s)", option, strings.Join(Options, ", "))
	}
	return nil
}

// Check says what is incomplete or ambiguous in the mapping.
func (f Fields) Check() error {
	names := map[string]string{}
	for _, nf := range [][2]string{{"id", f.ID}, {"intended", f.Intended}, {"key", f.Key}, {"window", f.Window}, {"count", f.Count}, {"latest", f.Latest}} {
		if nf[1] == "" {
			continue
		}
		if other, ok := names[nf[1]]; ok {
			return fmt.Errorf("the field %q is both %s and %s", nf[1], other, nf[0])
		}
		names[nf[1]] = nf[0]
	}
	if f.ID == "" || f.Intended == "" {
		return fmt.Errorf("the identity needs both its fields (id and intended)")
	}
	windowed := f.Key != "" || f.Window != "" || f.Count != ""
	if windowed && (f.Key == "" || f.Window == "" || f.Count == "") {
		return fmt.Errorf("a windowed count's output names key, window_end (or window_start) and count together (key=%q window=%q count=%q)", f.Key, f.Window, f.Count)
	}
	if !windowed && (f.Latest != "" || f.Size != 0 || f.Unit != UnitMs) {
		return fmt.Errorf("latest, window_size and window_unit belong to a windowed count's output: name key, window_end and count too")
	}
	if f.WindowStart && f.Size == 0 {
		return fmt.Errorf("a window named by its start (window_start) needs its size (window_size=10s) to know its end")
	}
	return nil
}

// Query is the mapping's endpoint options, only those that differ from
// the defaults (for a URL's query).
func (f Fields) Query() url.Values {
	q := url.Values{}
	d := Defaults()
	window := "window_end"
	if f.WindowStart {
		window = "window_start"
	}
	for _, o := range [][3]string{{"id", f.ID, d.ID}, {"intended", f.Intended, d.Intended}, {"key", f.Key, ""}, {window, f.Window, ""},
		{"count", f.Count, ""}, {"latest", f.Latest, ""}, {"window_unit", f.Unit, d.Unit}} {
		if o[1] != o[2] {
			q.Set(o[0], o[1])
		}
	}
	if f.Size != 0 {
		q.Set("window_size", f.Size.String())
	}
	return q
}

// ValidName says whether s can name a field in a mapping or an option.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
