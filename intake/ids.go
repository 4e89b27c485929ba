package intake

import (
	"crypto/rand"

	"github.com/oklog/ulid/v2"
)

// IDLen is the length of a generated event id: a ULID in Crockford base32.
const IDLen = ulid.EncodedSize

// IDs hands out event ids for one request: Reset, then Next per event.
// It draws one ULID (48-bit millisecond time, 80 random bits) per request
// and adds a per-event counter to the random part, the way ulid.Monotonic does. Ids of one
// request therefore sort in event order, and two requests collide only if
// their random parts land within a batch length of each other: a chance of
// about n/2^79 for n events, across instances and restarts alike, with no
// coordination.
//
// The 80 random bits are exactly the last 16 base32 characters, so adding
// one is an odometer step on the text: no re-encoding, no allocation.
type IDs struct {
	text [IDLen]byte
	init bool // text holds the last id handed out
}

// Reset starts a new request. The randomness is drawn lazily, so a request
// whose events all carry ids pays nothing.
func (g *IDs) Reset() { g.init = false }

// crockford is ULID's base32 alphabet; crockfordNext maps each of its
// characters to the following one.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var crockfordNext = func() (t [256]byte) {
	for i := 0; i+1 < len(crockford); i++ {
		t[crockford[i]] = crockford[i+1]
	}
	return t
}()

// Next appends the next id to dst; nowNano dates the request's first id.
func (g *IDs) Next(dst []byte, nowNano int64) []byte {
	if !g.init {
		var id ulid.ULID
		ms := uint64(0)
		if nowNano > 0 {
			ms = min(uint64(nowNano/1e6), ulid.MaxTime())
		}
		_ = id.SetTime(ms)
		_, _ = rand.Read(id[6:]) // crypto/rand does not fail on supported platforms
		_ = id.MarshalTextTo(g.text[:])
		g.init = true
		return append(dst, g.text[:]...)
	}
	// Add one to the random part; wrapping around its 80 bits is harmless.
	for i := IDLen - 1; i >= IDLen-16; i-- {
		if c := g.text[i]; c != 'Z' {
			g.text[i] = crockfordNext[c]
			break
		}
		g.text[i] = '0'
	}
	return append(dst, g.text[:]...)
}
