package benthos

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"
	"golang.org/x/sync/semaphore"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/wire"
)

// Metadata keys of a tuple's identity (docs/sut.md).
const (
	MetaTupleID    = "cp_tuple_id"    // uint64: the tuple's id (stream << 48 | number)
	MetaIntendedNs = "cp_intended_ns" // int64: the tuple's intended send time, Unix ns
)

// Fields of an ad event's structured content.
const (
	FieldUserID    = "user_id"
	FieldPageID    = "page_id"
	FieldAdID      = "ad_id"
	FieldAdType    = "ad_type"
	FieldEventType = "event_type"
	FieldEventTime = "event_time_ms"
	FieldIP        = "ip_address"
)

// Fields of a window's structured content.
const (
	FieldKey       = "key"
	FieldWindowEnd = "window_end_ms"
	FieldCount     = "count"
)

// decodeBucket makes one message per tuple of a data bucket; an end
// marker gives none. A malformed bucket is an error (and gives none).
// Each tuple's id is logged at op's point when it logs points (a nil op
// logs nothing).
func decodeBucket(msg []byte, schema string, decode scenarios.Decoder, op *dataflow.Operator) (service.MessageBatch, error) {
	var batch service.MessageBatch
	err := scenarios.EachTuple(msg, decode, func(t *scenarios.Tuple) {
		batch = append(batch, tupleMessage(t, schema, op))
	})
	if err != nil {
		return nil, err
	}
	return batch, nil
}

// tupleMessage is one tuple as an engine message, its identity in the
// metadata; its id is logged at op's point when op logs points.
func tupleMessage(t *scenarios.Tuple, schema string, op *dataflow.Operator) *service.Message {
	if op.Profiled() {
		op.Log(t.ID)
	}
	m := service.NewMessage(nil)
	m.MetaSetMut(MetaTupleID, t.ID)
	m.MetaSetMut(MetaIntendedNs, t.IntendedNs)
	switch schema {
	case scenarios.SchemaAdEvent:
		m.SetStructuredMut(map[string]any{
			FieldUserID: hex.EncodeToString(t.Ad.UserID), FieldPageID: hex.EncodeToString(t.Ad.PageID), FieldAdID: hex.EncodeToString(t.Ad.AdID),
			FieldAdType: string(t.Ad.AdType), FieldEventType: string(t.Ad.EventType), FieldEventTime: t.Ad.EventTimeMs, FieldIP: string(t.Ad.IP),
		})
	default: // synthetic: the payload; raw: the fields after the identity, as msgpack
		m.SetBytes(append([]byte(nil), t.Payload...))
	}
	return m
}

// Bounds of what cp_input decodes (docs/sut.md): a tuple becomes an
// engine message of several hundred bytes whatever its size on the wire,
// so a 1 MiB bucket of 3-byte tuples once grew a job by 267 MB.
const (
	// MaxBatchTuples is the most tuples one batch holds: a larger bucket
	// is handed over in pieces of this many.
	MaxBatchTuples = 4096
	// DefaultInFlight is the most tuples (cp_broker: messages) handed to
	// the engine and not yet acknowledged by it, unless max_in_flight
	// says otherwise: beyond, the input waits for acknowledgements. A
	// window buffer acknowledges a window's tuples only when it closes,
	// so the bound caps a windowed job at about max_in_flight / window
	// tuples a second: 32,768 made YSB on 1 s windows fail at 33.6 k/s
	// with 2% of its views dropped as late, on a host 40% busy
	// (BENCHMARKS.md, thirty-first session). 2^17 a second is about
	// twice what YSB reached here once it was lifted (55-77 k/s); twenty
	// 1 MiB buckets of tiny tuples still peak a job at 75 MiB.
	DefaultInFlight = 1 << 17
	// MaxInFlight is the largest max_in_flight taken (a job that holds
	// more unacknowledged holds gigabytes).
	MaxInFlight = 1 << 24
)

// inFlightField is max_in_flight, of cp_input and cp_broker's input.
func inFlightField(unit string) *service.ConfigField {
	return service.NewIntField("max_in_flight").Default(DefaultInFlight).
		Description(fmt.Sprintf("the most %s handed to the engine and not yet acknowledged (%d to %d): beyond, the input waits. A window buffer acknowledges a window's %s when it closes, so a windowed job needs about its rate times its window", unit, MaxBatchTuples, MaxInFlight, unit))
}

// inFlight reads max_in_flight: a bound below a batch would never let
// one in.
func inFlight(conf *service.ParsedConfig, plugin string) (*semaphore.Weighted, error) {
	n, err := conf.FieldInt("max_in_flight")
	if err != nil {
		return nil, err
	}
	if n < MaxBatchTuples || n > MaxInFlight {
		return nil, fmt.Errorf("%s: max_in_flight %d is out of range: %d to %d", plugin, n, MaxBatchTuples, MaxInFlight)
	}
	return semaphore.NewWeighted(int64(n)), nil
}

// bucketCursor is a large data bucket being handed over in pieces.
type bucketCursor struct {
	msg  []byte
	off  int
	left uint32
}

// startBucket checks a whole bucket (a malformed one gives no tuple, as
// when it is decoded at once) and puts the cursor at its first tuple; an
// end marker leaves the cursor empty.
func (c *bucketCursor) start(msg []byte, decode scenarios.Decoder) error {
	*c = bucketCursor{}
	h, err := wire.ParseHeader(msg)
	if err != nil || h.Kind != wire.KindData {
		return err
	}
	if err := scenarios.EachTuple(msg, decode, func(*scenarios.Tuple) {}); err != nil {
		return err
	}
	*c = bucketCursor{msg: msg, off: wire.HeaderSize, left: h.Count}
	return nil
}

// next decodes up to n of the bucket's next tuples, a message each.
func (c *bucketCursor) next(n int, schema string, decode scenarios.Decoder, op *dataflow.Operator) (service.MessageBatch, error) {
	batch := make(service.MessageBatch, 0, min(uint32(n), c.left))
	var t scenarios.Tuple
	for c.left > 0 && len(batch) < n {
		off, err := decode(c.msg, c.off, &t)
		if err != nil { // checked whole before: cannot happen
			*c = bucketCursor{}
			return nil, err
		}
		c.off, c.left = off, c.left-1
		batch = append(batch, tupleMessage(&t, schema, op))
	}
	if c.left == 0 {
		*c = bucketCursor{}
	}
	return batch, nil
}

// identity reads a message's tuple identity from its metadata.
func identity(m *service.Message) (id uint64, intended int64, err error) {
	v, ok := m.MetaGetMut(MetaTupleID)
	w, ok2 := m.MetaGetMut(MetaIntendedNs)
	if !ok || !ok2 {
		return 0, 0, errors.New("the message has no tuple identity (metadata cp_tuple_id and cp_intended_ns): a job must carry it from input to output (docs/sut.md)")
	}
	id, ok = v.(uint64)
	intended, ok2 = w.(int64)
	if !ok || !ok2 {
		return 0, 0, fmt.Errorf("the tuple identity is %T/%T, want uint64/int64: keep the metadata as cp_input set it", v, w)
	}
	return id, intended, nil
}

// appendTuple encodes m as one tuple of schema.
func appendTuple(b []byte, m *service.Message, schema string) ([]byte, error) {
	id, intended, err := identity(m)
	if err != nil {
		return b, err
	}
	switch schema {
	case scenarios.SchemaAdEvent:
		return appendAdEvent(b, m, id, intended)
	case scenarios.SchemaWindow:
		return appendWindow(b, m, id, intended)
	}
	payload, err := m.AsBytes()
	if err != nil {
		return b, err
	}
	if schema == scenarios.SchemaRaw {
		// the fields after the identity, as they came
		n, err := rawFields(payload)
		if err != nil {
			return b, err
		}
		b = wire.AppendArrayLen(b, 2+n)
		b = wire.AppendUint64Fixed(b, id)
		b = wire.AppendInt64Fixed(b, intended)
		return append(b, payload...), nil
	}
	b = wire.AppendArrayLen(b, 3)
	b = wire.AppendUint64Fixed(b, id)
	b = wire.AppendInt64Fixed(b, intended)
	return wire.AppendBin(b, payload), nil
}

// rawFields counts the msgpack values in b.
func rawFields(b []byte) (int, error) {
	n := 0
	for off := 0; off < len(b); n++ {
		next, err := wire.Skip(b, off)
		if err != nil {
			return 0, err
		}
		off = next
	}
	return n, nil
}

func structured(m *service.Message) (map[string]any, error) {
	v, err := m.AsStructured()
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the message is a %T, want an object", v)
	}
	return obj, nil
}

func appendAdEvent(b []byte, m *service.Message, id uint64, intended int64) ([]byte, error) {
	obj, err := structured(m)
	if err != nil {
		return b, err
	}
	var ids [3][]byte
	for i, f := range []string{FieldUserID, FieldPageID, FieldAdID} {
		s, _ := obj[f].(string)
		if ids[i], err = hex.DecodeString(s); err != nil || len(ids[i]) != 16 {
			return b, fmt.Errorf("ad event field %s %q: want 32 hex digits", f, s)
		}
	}
	adType, ok1 := obj[FieldAdType].(string)
	eventType, ok2 := obj[FieldEventType].(string)
	ip, ok3 := obj[FieldIP].(string)
	eventTime, ok4 := asInt(obj[FieldEventTime])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return b, fmt.Errorf("ad event %v: want strings %s, %s, %s and an integer %s", obj, FieldAdType, FieldEventType, FieldIP, FieldEventTime)
	}
	b = wire.AppendArrayLen(b, 9)
	b = wire.AppendUint64Fixed(b, id)
	b = wire.AppendInt64Fixed(b, intended)
	for _, v := range ids {
		b = wire.AppendBin(b, v)
	}
	b = wire.AppendStr(b, adType)
	b = wire.AppendStr(b, eventType)
	b = wire.AppendInt64Fixed(b, eventTime)
	return wire.AppendStr(b, ip), nil
}

func appendWindow(b []byte, m *service.Message, id uint64, intended int64) ([]byte, error) {
	obj, err := structured(m)
	if err != nil {
		return b, err
	}
	key, ok1 := obj[FieldKey].(string)
	end, ok2 := asInt(obj[FieldWindowEnd])
	count, ok3 := asInt(obj[FieldCount])
	if !ok1 || !ok2 || !ok3 || count < 0 {
		return b, fmt.Errorf("window %v: want a string %s and integers %s and %s", obj, FieldKey, FieldWindowEnd, FieldCount)
	}
	b = wire.AppendArrayLen(b, 5)
	b = wire.AppendUint64Fixed(b, id)
	b = wire.AppendInt64Fixed(b, intended)
	b = wire.AppendStr(b, key)
	b = wire.AppendInt64Fixed(b, end)
	return wire.AppendInt64Fixed(b, count), nil
}

// asInt reads an integer that a mapping may have made any numeric type.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case uint64:
		return int64(n), n <= 1<<63-1
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}
