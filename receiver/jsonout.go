package receiver

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/objfactory"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// A job that reads and writes JSON (format=json, docs/brokers.md) writes
// one event per message: no header, stream or sequence of the wire
// format. Its events are read by the endpoint's mapping into the tuple
// objects the consumer takes, and accounted under one stream per lane,
// jsonStream; their delivery is judged per identity (a map's or filter's)
// or per key and window (a windowed count's), never by a sequence.

// jsonStream is the stream a lane's JSON events are accounted under.
const jsonStream = 1<<32 - 1

// jsonProblems says what a receiver cannot do with JSON events.
func (c *Config) jsonProblems() []string {
	var problems []string
	for _, ep := range c.Endpoints {
		e, ok := driver.JSONEndpoint(ep)
		if !ok {
			continue
		}
		switch {
		case c.Drain:
			problems = append(problems, fmt.Sprintf("%s: --drain reads bucket headers; JSON events are decoded whole", ep))
		case e.Fields.Windowed() != (c.Schema == scenarios.SchemaWindow):
			problems = append(problems, fmt.Sprintf("%s: the mapping (key, window_end, count) and the schema (%s) disagree on whether the job writes windows", ep, c.Schema))
		}
	}
	return problems
}

// jsonMessages is the decoder of an endpoint's JSON events (nil: it
// carries buckets).
func jsonMessages(endpoint string, from *windowBasis) func(*objfactory.Bucket) error {
	if e, ok := driver.JSONEndpoint(endpoint); ok {
		return jsonDecoder(e.Fields, from)
	}
	return nil
}

// windowBasis counts a job's JSON windows by what their latency is
// measured from: a counted event's identity, the window's latest event
// time, or (neither given) its end.
type windowBasis struct{ identity, latest, end atomic.Uint64 }

// String says it as the answer's latency definition reads it ("": no
// JSON window; the harness's own buckets carry the identity).
func (w *windowBasis) String() string {
	var from []string
	for _, b := range []struct {
		n    uint64
		what string
	}{{w.identity.Load(), WindowFromIdentity}, {w.latest.Load(), WindowFromLatest}, {w.end.Load(), WindowFromEnd}} {
		if b.n > 0 {
			from = append(from, b.what)
		}
	}
	return strings.Join(from, " or ")
}

// What a window's latency is measured from (tally.Result.WindowLatencyFrom).
const (
	WindowFromIdentity = "its latest event's intended send"
	WindowFromLatest   = "its latest event's time (the job's latest field)"
	WindowFromEnd      = "the window's end (it carries no event's time)"
)

// jsonDecoder decodes a lane's JSON events by the mapping f into buckets
// of one tuple; it allocates nothing once the bucket has its tuple.
func jsonDecoder(f jsonev.Fields, from *windowBasis) func(*objfactory.Bucket) error {
	return func(b *objfactory.Bucket) error {
		var e jsonev.Event
		if err := jsonev.Decode(b.Msg, &f, &e); err != nil {
			return err
		}
		if cap(b.Tuples) < 1 {
			b.Tuples = make([]scenarios.Tuple, 1)
		}
		b.Tuples = b.Tuples[:1]
		t := &b.Tuples[0]
		*t = scenarios.Tuple{ID: e.ID, IntendedNs: e.IntendedNs}
		if f.Windowed() {
			t.Window = scenarios.Window{Key: e.Key, EndMs: e.EndMs, Count: e.Count, NoIdentity: !e.HasID}
			switch { // its latency is from its identity, else its latest event, else its end
			case e.HasID:
				from.identity.Add(1)
			case e.LatestMs > 0:
				t.IntendedNs = e.LatestMs * 1e6
				from.latest.Add(1)
			default:
				t.IntendedNs = e.EndMs * 1e6
				from.end.Add(1)
			}
		}
		b.Header = wire.Header{Kind: wire.KindData, Stream: jsonStream, Count: 1, BodyLen: uint32(len(b.Msg))}
		return nil
	}
}
