package scenarios

import (
	"fmt"
)

// Owed says which of a stream's tuples a declared filter keeps, by
// identity: a sender's thread sends the scenario's distinct tuples in
// buckets of Bucket, cycling through its templates (Templates), so the
// tuple with sequence number q of any stream is always the same item of
// the scenario. A receiver judging a filter's output per identity asks
// Kept(q) of each tuple it gets: a tuple the filter should have dropped
// is one it invented.
//
// It holds for a sender that sends every slot (overflow block): a
// dropped bucket moves the templates on but not the tuple sequence.
type Owed struct {
	Items  int    `json:"items"`  // the scenario's distinct tuples
	Bucket int    `json:"bucket"` // tuples per bucket
	Keep   []byte `json:"keep"`   // bit i (LSB first): item i is kept
}

// Owed evaluates p on every distinct tuple of s, as sent in buckets of
// bucket tuples.
func (s *Scenario) Owed(p *Predicate, bucket int) (*Owed, error) {
	if bucket < 1 {
		return nil, fmt.Errorf("bucket size must be at least 1, got %d", bucket)
	}
	if s.Schema == SchemaEvents {
		return s.owedEvents(p, bucket)
	}
	encoded, err := s.Generate()
	if err != nil {
		return nil, err
	}
	o := &Owed{Items: len(encoded), Bucket: bucket, Keep: make([]byte, (len(encoded)+7)/8)}
	for i, e := range encoded {
		var t Tuple
		if _, err := DecodeAdEvent(e.Bytes, 0, &t); err != nil {
			return nil, fmt.Errorf("decode item %d of scenario %q: %w", i, s.Name, err)
		}
		if p.Match(&t) {
			o.Keep[i/8] |= 1 << (i % 8)
		}
	}
	return o, nil
}

// owedEvents is Owed for a user's events.
func (s *Scenario) owedEvents(p *Predicate, bucket int) (*Owed, error) {
	o := &Owed{Items: len(s.Events), Bucket: bucket, Keep: make([]byte, (len(s.Events)+7)/8)}
	for i, e := range s.Events {
		n, err := p.matchesEvent(e)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i+1, err)
		}
		if n == 1 {
			o.Keep[i/8] |= 1 << (i % 8)
		}
	}
	return o, nil
}

// MaxOwedItems bounds a pattern from the network: a scenario's distinct
// tuples (Validate's bound).
const MaxOwedItems = 1 << 20

// Validate checks a pattern received from another host.
func (o *Owed) Validate() error {
	switch {
	case o.Items < 1 || o.Items > MaxOwedItems:
		return fmt.Errorf("owed pattern: %d items, want 1 to %d", o.Items, MaxOwedItems)
	case o.Bucket < 1 || o.Bucket > 1<<20:
		return fmt.Errorf("owed pattern: bucket of %d tuples, want 1 to %d", o.Bucket, 1<<20)
	case len(o.Keep) != (o.Items+7)/8:
		return fmt.Errorf("owed pattern: %d bytes of bits for %d items, want %d", len(o.Keep), o.Items, (o.Items+7)/8)
	}
	return nil
}

// Kept says whether the filter keeps the tuple with sequence number seq
// of a stream: the item Templates put at that place.
func (o *Owed) Kept(seq uint64) bool {
	bucket, items := uint64(o.Bucket), uint64(o.Items)
	templates := (items + bucket - 1) / bucket
	item := ((seq/bucket%templates)*bucket + seq%bucket) % items
	return o.Keep[item/8]&(1<<(item%8)) != 0
}
