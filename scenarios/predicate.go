package scenarios

import (
	"fmt"
	"slices"
	"strings"
)

// Predicate is a filter's condition as a job declares it to the harness
// (docs/sut.md): clauses FIELD == VALUE or FIELD != VALUE joined by &&,
// over an ad event's enumerated fields (ad_type, event_type). The harness
// evaluates it on its own pre-generated tuples, so that the output a
// filter must produce is known exactly.
type Predicate struct {
	Expr    string
	clauses []clause
}

type clause struct {
	field, value string
	equal        bool
}

// predicateFields are the fields a predicate may name, with their values.
var predicateFields = map[string][]string{"ad_type": adTypes, "event_type": eventTypes}

// ParsePredicate reads expr for tuples of schema.
func ParsePredicate(schema, expr string) (*Predicate, error) {
	if schema != SchemaAdEvent {
		return nil, fmt.Errorf("predicate %q: only ad events have fields a predicate can name (schema %s)", expr, schema)
	}
	if len(expr) > 512 {
		return nil, fmt.Errorf("predicate: %d bytes, at most 512", len(expr))
	}
	p := &Predicate{Expr: expr}
	for _, part := range strings.Split(expr, "&&") {
		op, equal := "==", true
		if strings.Contains(part, "!=") {
			op, equal = "!=", false
		}
		field, value, ok := strings.Cut(part, op)
		field, value = strings.TrimSpace(field), strings.Trim(strings.TrimSpace(value), `"'`)
		values, known := predicateFields[field]
		switch {
		case !ok:
			return nil, fmt.Errorf("predicate %q: clause %q is not FIELD == VALUE or FIELD != VALUE", expr, strings.TrimSpace(part))
		case !known:
			return nil, fmt.Errorf("predicate %q: field %q: want ad_type or event_type", expr, field)
		case !slices.Contains(values, value):
			return nil, fmt.Errorf("predicate %q: %s is one of %s, not %q", expr, field, strings.Join(values, ", "), value)
		}
		p.clauses = append(p.clauses, clause{field, value, equal})
	}
	return p, nil
}

// Match says whether p keeps t.
func (p *Predicate) Match(t *Tuple) bool {
	for _, c := range p.clauses {
		v := t.Ad.EventType
		if c.field == "ad_type" {
			v = t.Ad.AdType
		}
		if (string(v) == c.value) != c.equal {
			return false
		}
	}
	return true
}

// Matches counts the tuples of a data bucket that p keeps.
func (p *Predicate) Matches(msg []byte) (int, error) {
	n := 0
	err := EachTuple(msg, DecodeAdEvent, func(t *Tuple) {
		if p.Match(t) {
			n++
		}
	})
	return n, err
}
