package scenarios

import (
	"fmt"

	"github.com/cloudprofiler-go/cp/wire/jsonev"
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
	// events: over any top-level field of a user's events (SchemaEvents),
	// each compared as written: a string's content, or a number, true,
	// false or null as its JSON text
	events bool
}

type clause struct {
	field, value string
	equal        bool
}

// predicateFields are the fields a predicate may name, with their values.
var predicateFields = map[string][]string{"ad_type": adTypes, "event_type": eventTypes}

// ParsePredicate reads expr for tuples of schema.
func ParsePredicate(schema, expr string) (*Predicate, error) {
	if schema != SchemaAdEvent && schema != SchemaEvents {
		return nil, fmt.Errorf("predicate %q: only ad events and a user's events have fields a predicate can name (schema %s)", expr, schema)
	}
	if len(expr) > 512 {
		return nil, fmt.Errorf("predicate: %d bytes, at most 512", len(expr))
	}
	p := &Predicate{Expr: expr, events: schema == SchemaEvents}
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
		case p.events && !jsonev.ValidName(field):
			return nil, fmt.Errorf("predicate %q: field %.64q: 1 to 64 letters, digits, '_', '-' and '.'", expr, field)
		case p.events:
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
	if p.events {
		return p.matchesEvent(msg)
	}
	n := 0
	err := EachTuple(msg, DecodeAdEvent, func(t *Tuple) {
		if p.Match(t) {
			n++
		}
	})
	return n, err
}

// matchesEvent is Matches for a user's event as a JSON template (before
// a run: it allocates): 1 when p keeps it. A field the event lacks equals
// no value.
func (p *Predicate) matchesEvent(msg []byte) (int, error) {
	members, err := jsonev.Members(msg)
	if err != nil {
		return 0, err
	}
	for _, c := range p.clauses {
		v, ok := memberValue(members, c.field)
		if ok && len(v) >= 2 && v[0] == '"' {
			v = v[1 : len(v)-1]
		}
		if (ok && string(v) == c.value) != c.equal {
			return 0, nil
		}
	}
	return 1, nil
}
