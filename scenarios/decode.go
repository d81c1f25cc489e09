package scenarios

import "github.com/cloudprofiler-go/cp/wire"

// Tuple is the receiver's object for one tuple. Byte fields are sub-slices
// of the message buffer they were decoded from (zero copy): they stay valid
// until the bucket that holds the tuple is recycled.
type Tuple struct {
	ID         uint64
	IntendedNs int64 // intended emission time, Unix nanoseconds
	Ad         AdEvent
	Payload    []byte // synthetic: the payload; raw: the remaining fields as msgpack
}

// AdEvent is the Yahoo streaming benchmark event.
type AdEvent struct {
	UserID, PageID, AdID []byte // 16-byte UUIDs
	AdType, EventType    []byte
	EventTimeMs          int64
	IP                   []byte
}

// Decoder decodes one msgpack tuple at off into t and returns the offset
// after it. Implementations do not allocate.
type Decoder func(b []byte, off int, t *Tuple) (int, error)

// DecoderFor returns the decoder of a schema name.
func DecoderFor(schema string) (Decoder, bool) {
	switch schema {
	case SchemaAdEvent:
		return DecodeAdEvent, true
	case SchemaSynthetic:
		return DecodeSynthetic, true
	case SchemaRaw:
		return DecodeRaw, true
	}
	return nil, false
}

// decodeHead reads the array header, tuple id and intended time.
func decodeHead(b []byte, off int, t *Tuple, minFields int) (fields, next int, err error) {
	n, off, err := wire.ReadArrayLen(b, off)
	if err != nil {
		return 0, off, err
	}
	if n < minFields {
		return 0, off, wire.ErrTupleFields
	}
	if t.ID, off, err = wire.ReadUint(b, off); err != nil {
		return 0, off, err
	}
	if t.IntendedNs, off, err = wire.ReadInt(b, off); err != nil {
		return 0, off, err
	}
	return n, off, nil
}

// skipExtra passes over fields a newer producer may have appended.
func skipExtra(b []byte, off, extra int) (int, error) {
	var err error
	for ; extra > 0; extra-- {
		if off, err = wire.Skip(b, off); err != nil {
			return off, err
		}
	}
	return off, nil
}

// DecodeAdEvent decodes [id, intended_ns, user_id, page_id, ad_id, ad_type,
// event_type, event_time_ms, ip_address, ...].
func DecodeAdEvent(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 9)
	if err != nil {
		return off, err
	}
	a := &t.Ad
	if a.UserID, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.PageID, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.AdID, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.AdType, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.EventType, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	if a.EventTimeMs, off, err = wire.ReadInt(b, off); err != nil {
		return off, err
	}
	if a.IP, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	return skipExtra(b, off, n-9)
}

// DecodeSynthetic decodes [id, intended_ns, payload, ...].
func DecodeSynthetic(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 3)
	if err != nil {
		return off, err
	}
	if t.Payload, off, err = wire.ReadBytes(b, off); err != nil {
		return off, err
	}
	return skipExtra(b, off, n-3)
}

// DecodeRaw decodes [id, intended_ns, ...] and keeps the rest undecoded.
func DecodeRaw(b []byte, off int, t *Tuple) (int, error) {
	n, off, err := decodeHead(b, off, t, 2)
	if err != nil {
		return off, err
	}
	start := off
	if off, err = skipExtra(b, off, n-2); err != nil {
		return off, err
	}
	t.Payload = b[start:off:off]
	return off, nil
}
