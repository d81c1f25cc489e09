package scenarios

import (
	"fmt"
	"math/rand/v2"

	"github.com/cloudprofiler-go/cp/wire"
)

// Encoded is one pre-serialized tuple and where the emission loop patches it.
// Offsets point at the msgpack type byte of a fixed-width 64-bit integer.
type Encoded struct {
	Bytes        []byte
	IDOff        int
	IntendedOff  int
	EventTimeOff int // -1 when the schema has no event time
}

// Ad types and event types of the Yahoo streaming benchmark.
var (
	adTypes    = []string{"banner", "modal", "sponsored-search", "mail", "mobile"}
	eventTypes = []string{"view", "click", "purchase"}
)

// Generate pre-serializes the scenario's distinct tuples. The same scenario
// always yields the same bytes (ids and times are zero until patched).
func (s *Scenario) Generate() ([]Encoded, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Schema == SchemaEvents {
		return nil, fmt.Errorf("scenario %q: a user's events have no bucket form: send them as JSON (format=json on the endpoint)", s.Name)
	}
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 0x9e3779b97f4a7c15))
	out := make([]Encoded, s.Distinct)
	switch s.Schema {
	case SchemaAdEvent:
		ads := adIDs(rng, s.Campaigns*s.AdsPerCampaign)
		for i := range out {
			out[i] = encodeAdEvent(rng, ads)
		}
	case SchemaSynthetic:
		payload := s.Size - MinSyntheticSize
		payload -= wire.BinHeaderLen(payload) - 2 // a larger bin header eats into the payload
		if payload < 0 {
			payload = 0
		}
		for i := range out {
			p := make([]byte, payload)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			b := wire.AppendArrayLen(make([]byte, 0, s.Size), 3)
			e := Encoded{IDOff: len(b), EventTimeOff: -1}
			b = wire.AppendUint64Fixed(b, 0)
			e.IntendedOff = len(b)
			b = wire.AppendInt64Fixed(b, 0)
			b = wire.AppendBin(b, p)
			if len(b) != s.Size {
				return nil, fmt.Errorf("scenario %q: synthetic tuple encodes to %d bytes, want %d", s.Name, len(b), s.Size)
			}
			e.Bytes = b
			out[i] = e
		}
	}
	return out, nil
}

// adIDs are the first n UUIDs of rng: the scenario's ads.
func adIDs(rng *rand.Rand, n int) [][16]byte {
	ads := make([][16]byte, n)
	for i := range ads {
		ads[i] = uuid(rng)
	}
	return ads
}

// Ads are an ad-event scenario's ads, campaign by campaign: ad i belongs
// to campaign i / AdsPerCampaign. It is YSB's join table, the same for the
// same scenario, so that a harness knows every event's campaign.
func (s *Scenario) Ads() ([][16]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Schema != SchemaAdEvent {
		return nil, fmt.Errorf("scenario %q has no ads: its schema is %s, not %s", s.Name, s.Schema, SchemaAdEvent)
	}
	return adIDs(rand.New(rand.NewPCG(uint64(s.Seed), 0x9e3779b97f4a7c15)), s.Campaigns*s.AdsPerCampaign), nil
}

func uuid(rng *rand.Rand) [16]byte {
	var u [16]byte
	for i := 0; i < 16; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			u[i+j] = byte(v >> (8 * j))
		}
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

func encodeAdEvent(rng *rand.Rand, ads [][16]byte) Encoded {
	user, page := uuid(rng), uuid(rng)
	ad := ads[rng.IntN(len(ads))]
	ip := fmt.Sprintf("%d.%d.%d.%d", 1+rng.IntN(223), rng.IntN(256), rng.IntN(256), 1+rng.IntN(254))
	b := wire.AppendArrayLen(make([]byte, 0, 128), 9)
	e := Encoded{IDOff: len(b)}
	b = wire.AppendUint64Fixed(b, 0)
	e.IntendedOff = len(b)
	b = wire.AppendInt64Fixed(b, 0)
	b = wire.AppendBin(b, user[:])
	b = wire.AppendBin(b, page[:])
	b = wire.AppendBin(b, ad[:])
	b = wire.AppendStr(b, adTypes[rng.IntN(len(adTypes))])
	b = wire.AppendStr(b, eventTypes[rng.IntN(len(eventTypes))])
	e.EventTimeOff = len(b)
	b = wire.AppendInt64Fixed(b, 0)
	b = wire.AppendStr(b, ip)
	e.Bytes = b
	return e
}
