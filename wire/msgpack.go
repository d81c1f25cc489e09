package wire

import (
	"encoding/binary"
	"math"
)

// Zero-copy msgpack readers for the receive path. Each takes the buffer and
// an offset and returns the value and the offset after it. They accept every
// msgpack encoding of a value (a Python or Java producer may pick a shorter
// integer form than dgsend's fixed-width one) and never allocate: byte
// strings are returned as sub-slices of b.

// ReadArrayLen reads an array header.
func ReadArrayLen(b []byte, off int) (int, int, error) {
	if off >= len(b) {
		return 0, off, ErrTruncated
	}
	c := b[off]
	switch {
	case c&0xf0 == 0x90:
		return int(c & 0x0f), off + 1, nil
	case c == 0xdc:
		if off+3 > len(b) {
			return 0, off, ErrTruncated
		}
		return int(binary.BigEndian.Uint16(b[off+1:])), off + 3, nil
	case c == 0xdd:
		if off+5 > len(b) {
			return 0, off, ErrTruncated
		}
		n := binary.BigEndian.Uint32(b[off+1:])
		if uint64(n) > uint64(len(b)) { // each element takes at least one byte
			return 0, off, ErrTruncated
		}
		return int(n), off + 5, nil
	}
	return 0, off, ErrType
}

// ReadUint reads a non-negative integer of any msgpack width.
func ReadUint(b []byte, off int) (uint64, int, error) {
	v, neg, next, err := readInt(b, off)
	if err != nil {
		return 0, off, err
	}
	if neg {
		return 0, off, ErrType
	}
	return v, next, nil
}

// ReadInt reads a signed integer of any msgpack width.
func ReadInt(b []byte, off int) (int64, int, error) {
	v, neg, next, err := readInt(b, off)
	if err != nil {
		return 0, off, err
	}
	if neg {
		return int64(v), next, nil
	}
	if v > math.MaxInt64 {
		return 0, off, ErrType
	}
	return int64(v), next, nil
}

// readInt returns the raw 64 bits and whether the value is negative (then
// the bits are the two's complement int64).
func readInt(b []byte, off int) (uint64, bool, int, error) {
	if off >= len(b) {
		return 0, false, off, ErrTruncated
	}
	c := b[off]
	if c <= 0x7f {
		return uint64(c), false, off + 1, nil
	}
	if c >= 0xe0 {
		return uint64(int64(int8(c))), true, off + 1, nil
	}
	var size int
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2:
		size = 4
	case 0xcf, 0xd3:
		size = 8
	default:
		return 0, false, off, ErrType
	}
	if off+1+size > len(b) {
		return 0, false, off, ErrTruncated
	}
	p := b[off+1:]
	var u uint64
	var s int64
	switch c {
	case 0xcc:
		u = uint64(p[0])
	case 0xcd:
		u = uint64(binary.BigEndian.Uint16(p))
	case 0xce:
		u = uint64(binary.BigEndian.Uint32(p))
	case 0xcf:
		u = binary.BigEndian.Uint64(p)
	case 0xd0:
		s = int64(int8(p[0]))
	case 0xd1:
		s = int64(int16(binary.BigEndian.Uint16(p)))
	case 0xd2:
		s = int64(int32(binary.BigEndian.Uint32(p)))
	case 0xd3:
		s = int64(binary.BigEndian.Uint64(p))
	}
	if c >= 0xd0 { // signed forms
		return uint64(s), s < 0, off + 1 + size, nil
	}
	return u, false, off + 1 + size, nil
}

// ReadBytes reads a bin or str value and returns it as a sub-slice of b.
func ReadBytes(b []byte, off int) ([]byte, int, error) {
	if off >= len(b) {
		return nil, off, ErrTruncated
	}
	c := b[off]
	var n, hdr int
	switch {
	case c&0xe0 == 0xa0:
		n, hdr = int(c&0x1f), 1
	case c == 0xc4 || c == 0xd9:
		if off+2 > len(b) {
			return nil, off, ErrTruncated
		}
		n, hdr = int(b[off+1]), 2
	case c == 0xc5 || c == 0xda:
		if off+3 > len(b) {
			return nil, off, ErrTruncated
		}
		n, hdr = int(binary.BigEndian.Uint16(b[off+1:])), 3
	case c == 0xc6 || c == 0xdb:
		if off+5 > len(b) {
			return nil, off, ErrTruncated
		}
		u := binary.BigEndian.Uint32(b[off+1:])
		if uint64(u) > uint64(len(b)) {
			return nil, off, ErrTruncated
		}
		n, hdr = int(u), 5
	default:
		return nil, off, ErrType
	}
	start := off + hdr
	if start+n > len(b) {
		return nil, off, ErrTruncated
	}
	return b[start : start+n : start+n], start + n, nil
}

// Skip returns the offset after the msgpack value at off, of any type, so
// decoders can pass over fields they do not know (forward compatibility).
// Nesting is bounded so hostile input cannot exhaust the stack.
func Skip(b []byte, off int) (int, error) { return skip(b, off, 0) }

const maxDepth = 32

func skip(b []byte, off, depth int) (int, error) {
	if depth > maxDepth {
		return off, ErrType
	}
	if off >= len(b) {
		return off, ErrTruncated
	}
	c := b[off]
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return off + 1, nil
	case c&0xf0 == 0x80:
		return skipElems(b, off, uint64(c&0x0f)*2, 1, depth)
	case c&0xf0 == 0x90:
		return skipElems(b, off, uint64(c&0x0f), 1, depth)
	case c&0xe0 == 0xa0:
		return skipFixed(b, off, 1+int(c&0x1f))
	}
	switch c {
	case 0xcc, 0xd0:
		return skipFixed(b, off, 2)
	case 0xcd, 0xd1, 0xd4:
		return skipFixed(b, off, 3)
	case 0xd5:
		return skipFixed(b, off, 4)
	case 0xce, 0xd2, 0xca:
		return skipFixed(b, off, 5)
	case 0xd6:
		return skipFixed(b, off, 6)
	case 0xcf, 0xd3, 0xcb:
		return skipFixed(b, off, 9)
	case 0xd7:
		return skipFixed(b, off, 10)
	case 0xd8:
		return skipFixed(b, off, 18)
	case 0xc4, 0xd9:
		return skipLength(b, off, 2, 1)
	case 0xc5, 0xda:
		return skipLength(b, off, 3, 2)
	case 0xc6, 0xdb:
		return skipLength(b, off, 5, 4)
	case 0xc7, 0xc8, 0xc9:
		return skipExt(b, off, c)
	case 0xdc, 0xdd, 0xde, 0xdf:
		return skipContainer(b, off, c, depth)
	}
	return off, ErrType // 0xc1 is never used
}

// skipFixed skips n bytes from off.
func skipFixed(b []byte, off, n int) (int, error) {
	if off+n > len(b) {
		return off, ErrTruncated
	}
	return off + n, nil
}

// skipLength skips a str or bin: hdr bytes of header whose last size bytes
// are the big-endian length, then the data.
func skipLength(b []byte, off, hdr, size int) (int, error) {
	if off+hdr > len(b) {
		return off, ErrTruncated
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(b[off+1])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[off+1:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(b[off+1:]))
	}
	if n > uint64(len(b)) {
		return off, ErrTruncated
	}
	return skipFixed(b, off, hdr+int(n))
}

// skipExt skips an ext 8, 16 or 32: a length, a type byte, the data.
func skipExt(b []byte, off int, c byte) (int, error) {
	switch c {
	case 0xc7:
		if off+2 > len(b) {
			return off, ErrTruncated
		}
		return skipFixed(b, off, 3+int(b[off+1]))
	case 0xc8:
		if off+3 > len(b) {
			return off, ErrTruncated
		}
		return skipFixed(b, off, 4+int(binary.BigEndian.Uint16(b[off+1:])))
	}
	if off+5 > len(b) {
		return off, ErrTruncated
	}
	n := binary.BigEndian.Uint32(b[off+1:])
	if uint64(n) > uint64(len(b)) {
		return off, ErrTruncated
	}
	return skipFixed(b, off, 6+int(n))
}

// skipContainer skips an array 16/32 or a map 16/32 (two values per
// entry).
func skipContainer(b []byte, off int, c byte, depth int) (int, error) {
	hdr := 3
	if c == 0xdd || c == 0xdf {
		hdr = 5
	}
	if off+hdr > len(b) {
		return off, ErrTruncated
	}
	var n uint64
	if hdr == 3 {
		n = uint64(binary.BigEndian.Uint16(b[off+1:]))
	} else {
		n = uint64(binary.BigEndian.Uint32(b[off+1:]))
	}
	if c == 0xde || c == 0xdf {
		n *= 2
	}
	return skipElems(b, off, n, hdr, depth)
}

// skipElems skips n values after a container's hdr-byte header.
func skipElems(b []byte, off int, n uint64, hdr, depth int) (int, error) {
	if n > uint64(len(b)) {
		return off, ErrTruncated
	}
	p := off + hdr
	if p > len(b) {
		return off, ErrTruncated
	}
	var err error
	for i := uint64(0); i < n; i++ {
		if p, err = skip(b, p, depth+1); err != nil {
			return off, err
		}
	}
	return p, nil
}

// Fixed-width encoders used when pre-serializing tuples: dgsend always writes
// the tuple id and intended time as 9-byte msgpack integers so the emission
// loop can patch them at known offsets.

// AppendUint64Fixed appends v as msgpack uint 64 (0xcf + 8 bytes).
func AppendUint64Fixed(b []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

// AppendInt64Fixed appends v as msgpack int 64 (0xd3 + 8 bytes).
func AppendInt64Fixed(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

// PatchFixed overwrites the 8 payload bytes of a fixed-width integer whose
// type byte is at off.
func PatchFixed(b []byte, off int, v uint64) { binary.BigEndian.PutUint64(b[off+1:], v) }

// AppendArrayLen appends an array header.
func AppendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

// AppendBin appends a msgpack bin value.
func AppendBin(b, v []byte) []byte { return append(appendLength(b, len(v), 0xc4), v...) }

// AppendStr appends a msgpack str value.
func AppendStr(b []byte, s string) []byte {
	if len(s) < 32 {
		return append(append(b, 0xa0|byte(len(s))), s...)
	}
	return append(appendLength(b, len(s), 0xd9), s...)
}

// appendLength appends the shortest of the 8-, 16- and 32-bit length
// headers whose first code is code8 (bin: 0xc4, str: 0xd9).
func appendLength(b []byte, n int, code8 byte) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(b, code8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, code8+1), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code8+2), uint32(n))
}

// BinHeaderLen is the size of the header AppendBin writes for n bytes.
func BinHeaderLen(n int) int {
	switch {
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	}
	return 5
}
