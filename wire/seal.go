package wire

import "math/bits"

// SealKey is the secret a sweep's senders and receivers share in a trial
// of a job (docs/wire.md#the-sealed-intended-time): the zero key seals
// nothing.
type SealKey [2]uint64

// SealBits are the low bits of a sealed intended time that hold its tag:
// 256 ns, below the clocks' own error across a trial.
const SealBits = 8

const sealMask = 1<<SealBits - 1

// Seal returns the intended time of the tuple id with its low SealBits
// bits replaced by a tag of (id, the other bits) under k. A job must carry
// the intended time through unchanged; one that rewrites it (to hide how
// long it held a tuple) cannot make a tag that holds without the key.
func (k SealKey) Seal(id uint64, intendedNs int64) int64 {
	if k == (SealKey{}) {
		return intendedNs
	}
	hi := intendedNs &^ sealMask
	return hi | int64(k.tag(id, uint64(hi))&sealMask)
}

// Unseal returns a sealed intended time with its tag cleared, and whether
// the tag holds: false is a time the job rewrote (or a forged identity).
// The zero key returns the time as it is.
func (k SealKey) Unseal(id uint64, sealedNs int64) (int64, bool) {
	if k == (SealKey{}) {
		return sealedNs, true
	}
	hi := sealedNs &^ sealMask
	return hi, uint64(sealedNs)&sealMask == k.tag(id, uint64(hi))&sealMask
}

// tag is SipHash-2-4 of the two words under k: a keyed function that the
// tags a job sees do not give away.
func (k SealKey) tag(a, b uint64) uint64 {
	v0 := k[0] ^ 0x736f6d6570736575
	v1 := k[1] ^ 0x646f72616e646f6d
	v2 := k[0] ^ 0x6c7967656e657261
	v3 := k[1] ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	for _, m := range [3]uint64{a, b, 16 << 56} { // the two words, then the length block
		v3 ^= m
		round()
		round()
		v0 ^= m
	}
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
