package wirecorpus

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// The corpus is built here, by the test that checks the committed file
// against it (-update rewrites the file): nothing else builds it, and
// every other implementation reads the file.

// header builds a 24-byte header; bodyLen < 0 means the body's length.
func header(version, kind byte, stream uint32, seq uint64, count uint32, bodyLen int) []byte {
	h := make([]byte, 24)
	h[0], h[1], h[2], h[3] = 'C', 'P', version, kind
	binary.LittleEndian.PutUint32(h[4:], stream)
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint32(h[16:], count)
	binary.LittleEndian.PutUint32(h[20:], uint32(bodyLen))
	return h
}

// pack encodes v; maps with sorted keys, so that the corpus is the same
// bytes every time it is built.
func pack(v any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		panic(err) // the corpus's own values: a bug here, not input
	}
	return buf.Bytes()
}

// tuple is a synthetic tuple of stream s, number n.
func tuple(s uint32, n uint64) []byte {
	return pack([]any{uint64(s)<<48 | n, int64(1_763_700_000_000_000_000), []byte("payload")})
}

func data(s uint32, seq uint64, tuples ...[]byte) []byte {
	body := []byte{}
	for _, t := range tuples {
		body = append(body, t...)
	}
	return append(header(1, 1, s, seq, uint32(len(tuples)), len(body)), body...)
}

// bucketOf is a data bucket of n synthetic tuples numbered from first.
func bucketOf(s uint32, seq, first uint64, n int) []byte {
	var ts [][]byte
	for i := 0; i < n; i++ {
		ts = append(ts, tuple(s, first+uint64(i)))
	}
	return data(s, seq, ts...)
}

func end(s uint32, seq uint64, count uint32, body map[string]any) []byte {
	b := pack(body)
	return append(header(1, 2, s, seq, count, len(b)), b...)
}

func endOK(s uint32, buckets, tuples uint64) []byte {
	return end(s, buckets, 0, map[string]any{"tuples": tuples, "buckets": buckets, "dropped_buckets": 0, "dropped_tuples": 0, "reason": "completed"})
}

func adEvent(s uint32, n uint64, mod func([]any)) []byte {
	id := []byte("0123456789abcdef")
	v := []any{uint64(s)<<48 | n, int64(1_763_700_000_000_000_000), id, id, id, "banner", "view", int64(1_763_700_000_000), "10.1.2.3"}
	if mod != nil {
		mod(v)
	}
	return pack(v)
}

func msgs(ms ...[]byte) [][]string {
	out := make([][]string, len(ms))
	for i, m := range ms {
		out[i] = []string{hex.EncodeToString(m)}
	}
	return out
}

const st uint32 = 0x0102 // the stream of most cases: sender 1, thread 2

func key(s uint32) string { return fmt.Sprint(s) }

func one(s Stream) map[string]Stream { return map[string]Stream{key(st): s} }

// complete is the accounting of a complete stream.
func complete(tuples, buckets uint64) Stream {
	return Stream{ReceivedTuples: tuples, Buckets: buckets, Ended: true, Complete: true}
}

// Build returns the corpus.
func Build() *Corpus {
	c := &Corpus{Format: "cloudprofiler-go wire conformance corpus", Version: 1}
	add := adder(func(name, rule, schema string, m [][]string, malformed map[string]uint64, streams map[string]Stream) {
		if malformed == nil {
			malformed = map[string]uint64{}
		}
		if streams == nil {
			streams = map[string]Stream{}
		}
		c.Cases = append(c.Cases, Case{Name: name, Rule: rule, Schema: schema, Messages: m, Expect: Expect{Malformed: malformed, Streams: streams}})
	})
	syn := "synthetic"
	valid := [][]byte{bucketOf(st, 0, 0, 2), bucketOf(st, 1, 2, 2), endOK(st, 2, 4)}

	add("a valid stream", "Message layout; End-of-stream body", syn, msgs(valid...), nil, one(complete(4, 2)))
	add("a count-0 bucket uses a sequence number", "Data bucket body: count may be 0", syn,
		msgs(bucketOf(st, 0, 0, 2), bucketOf(st, 1, 2, 0), bucketOf(st, 2, 2, 1), endOK(st, 3, 3)), nil, one(complete(3, 3)))
	add("shorter than the header", "Message layout", syn, msgs([]byte("CP\x01\x01short")), map[string]uint64{"short": 1}, nil)
	bad := bucketOf(st, 0, 0, 1)
	bad[0] = 'X'
	add("wrong magic", "Message layout: magic", syn, msgs(bad), map[string]uint64{"magic": 1}, nil)
	layoutCases(add, syn)
	endCases(add, syn)
	sequenceCases(add, syn, valid)
	versionAndSchemaCases(add, syn)
	return c
}

// adder adds one case to the corpus.
type adder func(name, rule, schema string, m [][]string, malformed map[string]uint64, streams map[string]Stream)

// layoutCases break the header and the body's layout.
func layoutCases(add adder, syn string) {
	v2 := bucketOf(st, 0, 0, 1)
	v2[2] = 2
	add("a newer major version", "Versions: a receiver refuses a version it does not know", syn, msgs(v2), map[string]uint64{"version": 1}, nil)
	k3 := bucketOf(st, 0, 0, 1)
	k3[3] = 3
	add("unknown kind", "Message layout: kind", syn, msgs(k3), map[string]uint64{"kind": 1}, nil)
	long := bucketOf(st, 0, 0, 1)
	binary.LittleEndian.PutUint32(long[20:], uint32(len(long)-24+1))
	add("body length disagrees with the message", "Message layout: body length", syn, msgs(long), map[string]uint64{"length": 1}, nil)
	three := bucketOf(st, 0, 0, 2)
	binary.LittleEndian.PutUint32(three[16:], 3)
	add("tuple count above the tuples in the body", "Data bucket body: count values, nothing after the last", syn, msgs(three), map[string]uint64{"tuple": 1}, nil)
	add("a tuple that is not an array", "Data bucket body: each tuple is an array", syn, msgs(data(st, 0, pack(map[string]int{"id": 1}))), map[string]uint64{"tuple": 1}, nil)
	add("stream id above 0xffff", "Message layout: stream id's upper 16 bits are 0", syn,
		msgs(bucketOf(0x10000, 0, 0, 1)), map[string]uint64{"stream": 1}, nil)
	add("a multipart message", "Transport: single-part messages only", syn,
		[][]string{{hex.EncodeToString(bucketOf(st, 0, 0, 1)), hex.EncodeToString(bucketOf(st, 1, 1, 1))}},
		map[string]uint64{"multipart": 2}, nil)
}

// endCases break the end-of-stream marker.
func endCases(add adder, syn string) {
	add("end marker without buckets", "End-of-stream body: tuples and buckets are required", syn,
		msgs(bucketOf(st, 0, 0, 1), end(st, 1, 0, map[string]any{"tuples": 1})), map[string]uint64{"end_marker": 1},
		one(Stream{ReceivedTuples: 1, Buckets: 1}))
	add("empty end marker", "End-of-stream body: tuples and buckets are required", syn,
		msgs(end(st, 0, 0, map[string]any{})), map[string]uint64{"end_marker": 1}, nil)
	add("end marker with a non-zero count", "Message layout: count is 0 for an end marker", syn,
		msgs(bucketOf(st, 0, 0, 1), end(st, 1, 5, map[string]any{"tuples": 1, "buckets": 1})), map[string]uint64{"end_marker": 1},
		one(Stream{ReceivedTuples: 1, Buckets: 1}))
	add("end marker's buckets disagree with its sequence", "End-of-stream body: buckets equals the header's sequence", syn,
		msgs(bucketOf(st, 0, 0, 1), end(st, 10, 0, map[string]any{"tuples": 1, "buckets": 12})), map[string]uint64{"end_marker": 1},
		one(Stream{ReceivedTuples: 1, Buckets: 1}))
	add("negative count in an end marker", "End-of-stream body: counts from 0 to 2^63-1", syn,
		msgs(end(st, 0, 0, map[string]any{"tuples": int64(-1), "buckets": 0})), map[string]uint64{"end_marker": 1}, nil)
	add("count above 2^63-1 in an end marker", "End-of-stream body: counts from 0 to 2^63-1", syn,
		msgs(end(st, 0, 0, map[string]any{"tuples": uint64(1 << 63), "buckets": 0})), map[string]uint64{"end_marker": 1}, nil)
	add("reason that is not a string", "End-of-stream body: reason is a str", syn,
		msgs(end(st, 0, 0, map[string]any{"tuples": 0, "buckets": 0, "reason": 1})), map[string]uint64{"end_marker": 1}, nil)
}

// sequenceCases are complete or incomplete streams: counts, gaps,
// duplicates, stale buckets and data after the end.
func sequenceCases(add adder, syn string, valid [][]byte) {
	var ten [][]byte
	for q := uint64(0); q < 10; q++ {
		ten = append(ten, bucketOf(st, q, q, 1))
	}
	add("end marker announcing more buckets than arrived", "Complete: every bucket the end marker announces arrived", syn,
		msgs(append(ten, end(st, 14, 0, map[string]any{"tuples": 10, "buckets": 14}))...), nil,
		one(Stream{ReceivedTuples: 10, Buckets: 10, Ended: true}))
	add("end marker announcing fewer tuples than arrived", "Complete: the tuples consumed equal the end marker's tuples", syn,
		msgs(bucketOf(st, 0, 0, 2), end(st, 1, 0, map[string]any{"tuples": 1, "buckets": 1})), nil,
		one(Stream{ReceivedTuples: 2, Buckets: 1, Ended: true}))
	add("no end marker", "A stream is complete only with its end marker", syn,
		msgs(bucketOf(st, 0, 0, 2)), nil, one(Stream{ReceivedTuples: 2, Buckets: 1}))
	add("data after the end marker", "A stream ends with its end marker", syn,
		msgs(append(append([][]byte{}, valid...), bucketOf(st, 2, 4, 1))...), map[string]uint64{"after_end": 1}, one(complete(4, 2)))
	add("a second end marker", "A stream ends with its end marker", syn,
		msgs(append(append([][]byte{}, valid...), endOK(st, 2, 4))...), map[string]uint64{"after_end": 1}, one(complete(4, 2)))
	add("a duplicate bucket", "Sequence: a number seen within the window is a duplicate", syn,
		msgs(bucketOf(st, 0, 0, 2), bucketOf(st, 1, 2, 2), bucketOf(st, 1, 2, 2), endOK(st, 2, 4)), nil,
		one(Stream{ReceivedTuples: 4, Buckets: 2, Duplicates: 1, Ended: true, Complete: true}))
	add("a bucket never arrives", "Sequence: skipped numbers are missing", syn,
		msgs(bucketOf(st, 0, 0, 1), bucketOf(st, 2, 2, 1), endOK(st, 3, 3)), nil,
		one(Stream{ReceivedTuples: 2, Buckets: 2, Gaps: 1, Ended: true}))
	var run [][]byte
	for q := uint64(0); q < 1501; q++ {
		run = append(run, data(st, q)) // count-0 buckets: 24 bytes each
	}
	run = append(run, data(st, 5), endOK(st, 1501, 0))
	add("bucket 5 re-sent after bucket 1500", "Sequence: more than 1023 behind the highest number seen is stale", syn,
		msgs(run...), nil, one(Stream{Buckets: 1501, Stale: 1, Ended: true, Complete: true}))
}

// versionAndSchemaCases are what a receiver must accept (additions within
// a version, any msgpack encoding) and the schemas' own rules.
func versionAndSchemaCases(add adder, syn string) {
	add("unknown end marker keys are ignored", "Versions: additions within a major version", syn,
		msgs(bucketOf(st, 0, 0, 1), end(st, 1, 0, map[string]any{"tuples": 1, "buckets": 1, "checksum": "abc", "reason": "completed"})), nil,
		one(complete(1, 1)))
	add("extra trailing tuple elements are skipped", "Versions: additions within a major version", syn,
		msgs(data(st, 0, pack([]any{uint64(st) << 48, int64(1), []byte("p"), "new field", map[string]int{"x": 1}})), endOK(st, 1, 1)), nil,
		one(complete(1, 1)))
	add("shortest integer forms", "Any valid msgpack encoding is accepted", syn,
		msgs(data(st, 0, []byte{0x93, 0x05, 0x07, 0xc4, 0x01, 'x'}), endOK(st, 1, 1)), nil, one(complete(1, 1)))
	add("a str payload where bin is written", "Any valid msgpack encoding is accepted (str for bin)", syn,
		msgs(data(st, 0, pack([]any{uint64(st) << 48, int64(1), "text"})), endOK(st, 1, 1)), nil, one(complete(1, 1)))
	add("a tuple id of another stream", "tuple_id: not checked against the stream", syn,
		msgs(data(st, 0, tuple(7, 99)), endOK(st, 1, 1)), nil, one(complete(1, 1)))
	add("a valid ad event", "ad-event schema", "ad-event", msgs(data(st, 0, adEvent(st, 0, nil)), endOK(st, 1, 1)), nil, one(complete(1, 1)))
	add("ad event with a 5-byte user_id", "ad-event schema: ids are bin of exactly 16 bytes", "ad-event",
		msgs(data(st, 0, adEvent(st, 0, func(v []any) { v[2] = []byte("abcde") }))), map[string]uint64{"tuple": 1}, nil)
	add("ad event with an unknown ad_type", "ad-event schema: ad_type values", "ad-event",
		msgs(data(st, 0, adEvent(st, 0, func(v []any) { v[5] = "popup" }))), map[string]uint64{"tuple": 1}, nil)
	add("ad event with an unknown event_type", "ad-event schema: event_type values", "ad-event",
		msgs(data(st, 0, adEvent(st, 0, func(v []any) { v[6] = "hover" }))), map[string]uint64{"tuple": 1}, nil)
	add("ad event: event_time_ms and ip are opaque", "ad-event schema: opaque fields", "ad-event",
		msgs(data(st, 0, adEvent(st, 0, func(v []any) { v[7], v[8] = int64(-1), "not an address" })), endOK(st, 1, 1)), nil, one(complete(1, 1)))
	add("raw keeps any fields after the first two", "raw schema", "raw",
		msgs(data(st, 0, pack([]any{uint64(st) << 48, int64(1), "anything", []int{1, 2}})), endOK(st, 1, 1)), nil, one(complete(1, 1)))
}

// Encode is the corpus as its file holds it.
func (c *Corpus) Encode() ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}
