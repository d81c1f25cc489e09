package report

import (
	"fmt"
	"html/template"
	"strings"
)

// svgf is the one way the report writes SVG by hand: every string and
// Stringer argument is HTML-escaped before it is formatted, element text
// and attribute values alike, so that no name read from a run directory
// (a stage, a worker, an activity's kind) can open an element or an
// attribute. Numbers are formatted as they are.
func svgf(b *strings.Builder, format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = template.HTMLEscapeString(v)
		case fmt.Stringer:
			args[i] = template.HTMLEscapeString(v.String())
		case error:
			args[i] = template.HTMLEscapeString(v.Error())
		}
	}
	fmt.Fprintf(b, format, args...)
}
