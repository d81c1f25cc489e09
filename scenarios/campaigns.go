package scenarios

import (
	"cmp"

	"fmt"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
	"slices"
	"strings"
)

// CampaignID names campaign c of an ad-event scenario: the key of YSB's
// windows (docs/sut.md).
func CampaignID(c int) string { return fmt.Sprintf("campaign-%04d", c) }

// Campaigns is an ad-event scenario's join of ads to campaigns, as the
// harness knows it: ad i belongs to campaign i / AdsPerCampaign.
type Campaigns struct {
	of map[[16]byte]int32
	n  int
	// A user's events (SchemaEvents): the key field's values by index,
	// and the field.
	keys  []string
	keyOf map[string]int32
	field string
}

// KeyCount is how many tuples of a bucket one campaign has.
type KeyCount struct {
	Campaign int32
	N        uint32
}

// Join is s's join table (an error for a schema without ads).
func (s *Scenario) Join() (*Campaigns, error) {
	if s.Schema == SchemaEvents {
		if s.KeyField == "" {
			return nil, fmt.Errorf("scenario %q: a window over a user's events counts by a key field: name it (--events-key FIELD)", s.Name)
		}
		names, idx, err := s.eventKeys()
		if err != nil {
			return nil, err
		}
		return &Campaigns{n: len(names), keys: names, keyOf: idx, field: s.KeyField}, nil
	}
	ads, err := s.Ads()
	if err != nil {
		return nil, err
	}
	c := &Campaigns{of: make(map[[16]byte]int32, len(ads)), n: s.Campaigns}
	for i, ad := range ads {
		c.of[ad] = int32(i / s.AdsPerCampaign)
	}
	return c, nil
}

// Len is the number of campaigns.
func (c *Campaigns) Len() int { return c.n }

// Name is campaign i's key, as a windowed job's output names it.
func (c *Campaigns) Name(i int) string {
	if c.keys != nil {
		return c.keys[i]
	}
	return CampaignID(i)
}

// Count counts, per campaign, the tuples of a data bucket that p keeps
// (p nil: every tuple), in campaign order. It runs once per bucket
// template before a run: the emission loop only adds the counts up.
func (c *Campaigns) Count(msg []byte, p *Predicate) ([]KeyCount, error) {
	if c.keys != nil {
		return c.countEvent(msg, p)
	}
	per := map[int32]uint32{}
	var unknown []byte
	err := EachTuple(msg, DecodeAdEvent, func(t *Tuple) {
		if p != nil && !p.Match(t) {
			return
		}
		var ad [16]byte
		if len(t.Ad.AdID) != len(ad) {
			unknown = t.Ad.AdID
			return
		}
		copy(ad[:], t.Ad.AdID)
		k, ok := c.of[ad]
		if !ok {
			unknown = t.Ad.AdID
			return
		}
		per[k]++
	})
	if err != nil {
		return nil, err
	}
	if unknown != nil {
		return nil, fmt.Errorf("a tuple's ad %x is none of the scenario's", unknown)
	}
	out := make([]KeyCount, 0, len(per))
	for k, n := range per {
		out = append(out, KeyCount{Campaign: k, N: n})
	}
	slices.SortFunc(out, func(a, b KeyCount) int { return int(a.Campaign - b.Campaign) })
	return out, nil
}

// WindowKey is one key's window: its key and its end (Unix ms,
// exclusive), as a windowed count's output carries them.
type WindowKey struct {
	Key   string `json:"key"`
	EndMs int64  `json:"window_end_ms"`
}

// WindowCount is a window's count: owed (the senders') or counted (the
// job's, as the receivers consumed them).
type WindowCount struct {
	WindowKey
	Count uint64 `json:"count"`
}

// CompareWindows orders windows by end, then key.
func CompareWindows(a, b WindowCount) int {
	if a.EndMs != b.EndMs {
		return cmp.Compare(a.EndMs, b.EndMs)
	}
	return strings.Compare(a.Key, b.Key)
}

// countEvent is Count for a user's event as a JSON template: its key's
// count of 1, when p keeps it.
func (c *Campaigns) countEvent(msg []byte, p *Predicate) ([]KeyCount, error) {
	if p != nil {
		if n, err := p.matchesEvent(msg); err != nil || n == 0 {
			return nil, err
		}
	}
	members, err := jsonev.Members(msg)
	if err != nil {
		return nil, err
	}
	v, ok := memberValue(members, c.field)
	if !ok || len(v) < 2 || v[0] != '"' {
		return nil, fmt.Errorf("the key field %q is not a string in the event", c.field)
	}
	k, ok := c.keyOf[string(v[1:len(v)-1])]
	if !ok {
		return nil, fmt.Errorf("the key %s is none of the events'", v)
	}
	return []KeyCount{{Campaign: k, N: 1}}, nil
}
