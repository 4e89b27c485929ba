package tablesink

import (
	"unicode/utf8"
	"unsafe"
)

// arena holds the strings and JSON of one flush's entities in shared
// blocks: one allocation for about a thousand entities rather than several
// for each. What it hands out is never written again, so its strings can
// view the block without copying.
type arena struct {
	block   []byte
	scratch []byte // for encodings copied into the block
	key     []byte // a record's member name with escapes, unescaped
	props   []byte // a record's "p" object, compact
	skip    []byte // a record's member this version does not read
}

// A block is arenaBlockBytes; one with less than arenaBlockRoom left (more
// than most entities take) is left for a new one before an entity's JSON.
// A larger entity still fits: append moves the block to a new array, and
// what was handed out before keeps the old one.
const (
	arenaBlockBytes = 256 << 10
	arenaBlockRoom  = 4 << 10
)

// str copies b into the arena and returns it as a string.
func (a *arena) str(b []byte) string {
	b = a.bytes(b)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// bytes copies b into the arena and returns the copy.
func (a *arena) bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, max(arenaBlockBytes, len(b)))
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return a.block[start:len(a.block):len(a.block)]
}

// entityJSON writes e's JSON (appendEntityJSON) into the arena and returns it.
func (a *arena) entityJSON(e *Entity) []byte {
	if cap(a.block)-len(a.block) < arenaBlockRoom {
		a.block = make([]byte, 0, arenaBlockBytes)
	}
	start := len(a.block)
	a.block = appendEntityJSON(a.block, e)
	return a.block[start:len(a.block):len(a.block)]
}

// validUTF8 is validUTF8(b) in the arena.
func (a *arena) validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return a.str(b)
	}
	return validUTF8(b)
}
