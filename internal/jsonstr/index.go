package jsonstr

import (
	"math/bits"
	"unsafe"
)

// Index finds where the strings of one buffer (a line of JSON) end, for a
// reader that calls Scan on many of them. Reset marks, 64 bytes at a time
// with vector instructions, every quote and every byte Scan must look at
// closely: a backslash, a control character, a byte >= 0x80. Then a
// string whose closing quote comes before any such byte ends at the next
// marked quote, found by a bit search instead of a walk over its bytes,
// and any other string is read by Scan from its first such byte on (one
// not terminated, from its start). Where the instructions are missing (no
// AVX2), Index.Scan is Scan.
//
// A line of the load generator's events holds about twenty strings, keys
// included, and nearly all of them end at the next quote.
//
// The marks take a quarter of the line's length, kept for the next line
// until Release.
type Index struct {
	b     []byte
	marks []marks // one per 64-byte block of b
}

// marks are one block's: bit k stands for the block's byte k.
type marks struct {
	quotes  uint64 // '"'
	special uint64 // '\\', < 0x20 or >= 0x80
}

// Reset indexes b for the Scan calls that follow, which read b.
func (x *Index) Reset(b []byte) {
	x.b = b
	if !canMark {
		return
	}
	words := (len(b)+63)/64 + 1 // and a last one with no marks for Scan to read
	if cap(x.marks) < words {
		x.marks = make([]marks, words)
	}
	x.marks = x.marks[:words]
	x.marks[words-1] = marks{}
	full := len(b) / 64
	if full > 0 {
		markBlocks(&b[0], full, &x.marks[0])
	}
	rest := len(b) - full*64
	if rest == 0 {
		return
	}
	// The last block is partial. When b's capacity goes on for a whole
	// block (a line inside a request body), mark the bytes past its end
	// too and drop their bits; else mark a copy.
	if tail := b[full*64 : cap(b)]; len(tail) >= 64 {
		markBlocks(&tail[0], 1, &x.marks[full])
	} else {
		var block [64]byte
		copy(block[:], b[full*64:])
		markBlocks(&block[0], 1, &x.marks[full])
	}
	keep := uint64(1)<<rest - 1
	x.marks[full].quotes &= keep
	x.marks[full].special &= keep
}

// Release forgets the buffer, and drops the marks when they take more
// than keep bytes, for a reader that pools its Index.
func (x *Index) Release(keep int) {
	x.b = nil
	if cap(x.marks)*int(unsafe.Sizeof(marks{})) > keep {
		x.marks = nil
	}
}

// Scan is Scan(b, i) for the b of the last Reset. Its common case, a
// short string with nothing to look at closely, takes a few instructions.
func (x *Index) Scan(i int) (end int, flags Flags) {
	j := i + 1
	if w, sh := j>>6, uint(j&63); w+1 < len(x.marks) {
		// The 64 bytes from j on, from this block and the next. q's lowest
		// bit is the next quote; q^(q-1) covers it and the bytes before it.
		m0, m1 := &x.marks[w], &x.marks[w+1]
		q := m0.quotes>>sh | m1.quotes<<(64-sh)
		if s := m0.special>>sh | m1.special<<(64-sh); q != 0 && s&(q^(q-1)) == 0 {
			return j + bits.TrailingZeros64(q) + 1, 0
		}
	}
	return x.scan(i)
}

// scan is Scan past the common case: a string longer than 63 bytes, with
// a byte that needs a close look, or not terminated.
func (x *Index) scan(i int) (end int, flags Flags) {
	j := i + 1
	for w, sh := j>>6, uint(j&63); w < len(x.marks); w, sh = w+1, 0 {
		q, s := x.marks[w].quotes>>sh, x.marks[w].special>>sh
		if q != 0 {
			t := bits.TrailingZeros64(q)
			if s&(1<<t-1) == 0 {
				return w<<6 + int(sh) + t + 1, 0
			}
		}
		if s != 0 {
			return scanFrom(x.b, w<<6+int(sh)+bits.TrailingZeros64(s))
		}
	}
	return Scan(x.b, i)
}
