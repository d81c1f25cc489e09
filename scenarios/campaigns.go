package scenarios

import (
	"cmp"
	"fmt"
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
}

// KeyCount is how many tuples of a bucket one campaign has.
type KeyCount struct {
	Campaign int32
	N        uint32
}

// Join is s's join table (an error for a schema without ads).
func (s *Scenario) Join() (*Campaigns, error) {
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

// Count counts, per campaign, the tuples of a data bucket that p keeps
// (p nil: every tuple), in campaign order. It runs once per bucket
// template before a run: the emission loop only adds the counts up.
func (c *Campaigns) Count(msg []byte, p *Predicate) ([]KeyCount, error) {
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
