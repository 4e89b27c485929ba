package intake

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/oklog/ulid/v2"
)

// IDLen is the length of a generated event id: a ULID in Crockford base32.
const IDLen = ulid.EncodedSize

// idGen hands out event ids for one request. It draws one ULID (48-bit
// millisecond time, 80 random bits) per request and adds a per-event
// counter to the random part, the way ulid.Monotonic does. Ids of one
// request therefore sort in event order, and two requests collide only if
// their random parts land within a batch length of each other: a chance of
// about n/2^79 for n events, across instances and restarts alike, with no
// coordination. Each id costs an add and a base32 encode, no allocation.
type idGen struct {
	base ulid.ULID
	hi   uint16 // the top 16 random bits, bytes 6..7
	lo   uint64 // the low 64 random bits, bytes 8..15
	n    uint64 // ids handed out since reset
	init bool
}

// reset starts a new request: the next id draws fresh randomness lazily, so
// a request whose events all carry ids pays nothing.
func (g *idGen) reset() { g.init = false; g.n = 0 }

// next appends the next id to dst.
func (g *idGen) next(dst []byte, nowNano int64) []byte {
	if !g.init {
		ms := uint64(0)
		if nowNano > 0 {
			ms = uint64(nowNano / 1e6)
		}
		if ms > ulid.MaxTime() {
			ms = ulid.MaxTime()
		}
		_ = g.base.SetTime(ms)
		_, _ = rand.Read(g.base[6:]) // crypto/rand never fails on supported platforms
		g.hi = binary.BigEndian.Uint16(g.base[6:8])
		g.lo = binary.BigEndian.Uint64(g.base[8:16])
		g.init = true
	}
	id := g.base
	lo := g.lo + g.n
	hi := g.hi
	if lo < g.lo { // carry into the top bits; wrapping the 80 bits is harmless
		hi++
	}
	g.n++
	binary.BigEndian.PutUint16(id[6:8], hi)
	binary.BigEndian.PutUint64(id[8:16], lo)
	var b [IDLen]byte
	_ = id.MarshalTextTo(b[:])
	return append(dst, b[:]...)
}
