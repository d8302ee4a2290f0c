package solver

import "math/bits"

// bitset is a set of small non-negative integers (unit indices, hardware or
// image type indices). Sets of one problem all have the same length, so the
// binary operations need no length checks beyond the shorter operand.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }
func (b bitset) add(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) remove(i int)   { b[i>>6] &^= 1 << (uint(i) & 63) }
func (b bitset) clone() bitset  { return append(bitset(nil), b...) }

func (b bitset) isEmpty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

func (b bitset) intersects(o bitset) bool {
	for i := range b {
		if b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// and returns a new set b ∩ o.
func (b bitset) and(o bitset) bitset {
	r := make(bitset, len(b))
	for i := range b {
		r[i] = b[i] & o[i]
	}
	return r
}

// andInto stores b ∩ o in dst (of b's length) and returns it.
func (b bitset) andInto(dst, o bitset) bitset {
	for i := range b {
		dst[i] = b[i] & o[i]
	}
	return dst[:len(b)]
}

func (b bitset) subsetOf(o bitset) bool {
	for i := range b {
		if b[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

func (b bitset) equal(o bitset) bool {
	for i := range b {
		if b[i] != o[i] {
			return false
		}
	}
	return true
}

// first returns the smallest member, or -1 for the empty set. Type sets are
// indexed in preference order, so first is the most preferred type.
func (b bitset) first() int {
	for i, w := range b {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// members lists the set in increasing order.
func (b bitset) members() []int {
	out := make([]int, 0, b.count())
	for i, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			out = append(out, i*64+t)
			w &= w - 1
		}
	}
	return out
}

// less orders sets by their members, smallest differing member first, so
// that sorting sets is deterministic.
func (b bitset) less(o bitset) bool {
	for i := range b {
		if b[i] != o[i] {
			x := b[i] ^ o[i]
			low := x & -x
			return b[i]&low != 0
		}
	}
	return false
}
