package intake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"ingest/admission"
	"ingest/internal/httperr"
)

// MaxZstdWindow caps the window a zstd frame may ask for. The decoder keeps
// a window-sized history, so a hostile frame header could otherwise make it
// allocate up to 512 MiB before producing a byte. Every zstd level up to 19
// uses at most 8 MiB; 32 MiB also covers --ultra -20.
const MaxZstdWindow = 32 << 20

// Decompress appends the body decoded per encoding (the Content-Encoding
// header: "", "identity", "gzip", "x-gzip", "zstd", "deflate", "snappy",
// case-insensitive) to dst and returns the extended slice.
//
// The decoded size is limited to maxBytes (no limit when maxBytes <= 0):
// past it Decompress stops decoding and returns a 413 *httperr.Error. The
// output grows step by step, never past the limit, and every step is
// reserved from mem (when not nil) before its memory is used: the new
// capacity before it is allocated, a step at a time within the capacity
// dst already has. A refusal from mem ends decoding and is returned. So a
// bomb costs what the budget gives, not what it expands to. An unknown
// encoding is a 415 *httperr.Error, corrupt data a 400.
//
// "deflate" accepts both the zlib-wrapped stream RFC 9110 specifies and the
// raw deflate many clients send. "snappy" accepts the framed stream format
// and the block format (what Prometheus remote write sends).
//
// Decoders come from pools and are reset per call; their own memory is
// small and fixed, except a framed S2 stream's (blocks up to 4 MiB), which
// is reserved too. For identity bodies the bytes are copied; callers on the
// hot path may skip the call instead.
func Decompress(dst, body []byte, encoding string, maxBytes int, mem admission.Memory) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = int(^uint(0) >> 2)
	}
	enc := strings.TrimSpace(encoding)
	if len(body) == 0 && knownEncoding(enc) {
		return dst, nil // an empty body decodes to nothing whatever the encoding
	}
	if mem == nil {
		mem = unbounded{}
	}
	out := output{b: dst, start: len(dst), limit: maxBytes, mem: mem, counted: len(dst)}
	switch {
	case enc == "" || strings.EqualFold(enc, "identity"):
		if len(body) > maxBytes {
			return dst, tooLarge(maxBytes)
		}
		if err := out.room(len(body)); err != nil {
			return dst, err
		}
		return append(out.b, body...), nil
	case strings.EqualFold(enc, "gzip") || strings.EqualFold(enc, "x-gzip"):
		return gunzip(&out, body)
	case strings.EqualFold(enc, "zstd"):
		return unzstd(&out, body)
	case strings.EqualFold(enc, "deflate"):
		return inflate(&out, body)
	case strings.EqualFold(enc, "snappy") || strings.EqualFold(enc, "x-snappy-framed"):
		return unsnappy(&out, body)
	}
	return dst, errorf(http.StatusUnsupportedMediaType,
		"cannot decode body: unknown Content-Encoding %q; use gzip, zstd, deflate, snappy or identity", encoding)
}

func knownEncoding(enc string) bool {
	for _, e := range [...]string{"", "identity", "gzip", "x-gzip", "zstd", "deflate", "snappy", "x-snappy-framed"} {
		if strings.EqualFold(enc, e) {
			return true
		}
	}
	return false
}

func tooLarge(maxBytes int) *httperr.Error {
	return errorf(http.StatusRequestEntityTooLarge,
		"cannot decode body: decompressed body is larger than --max-decompressed-bytes (%d bytes)", maxBytes)
}

func corrupt(enc string, err error) *httperr.Error {
	return errorf(http.StatusBadRequest, "cannot decode %s body: %v", enc, err)
}

// errTooLarge marks a read that went past the limit.
var errTooLarge = errors.New("decoded body too large")

// output is the decoded body as it grows after b[:start], and what of it
// is reserved from mem.
type output struct {
	b       []byte
	start   int // the caller's bytes before the body
	limit   int // the most decoded bytes allowed
	mem     admission.Memory
	counted int // bytes of b's capacity reserved (the caller's prefix counts as reserved)
}

// used is how many decoded bytes the output holds.
func (o *output) used() int { return len(o.b) - o.start }

// room makes want bytes (at most what the limit leaves, plus one to see a
// body past it) free and reserved after the decoded ones (admission.Grow).
func (o *output) room(want int) error {
	want = min(max(want, 1), o.limit+1-o.used())
	if want <= 0 {
		return errTooLarge
	}
	var err error
	o.b, err = admission.Grow(o.mem, o.b, want, o.start+o.limit+1, &o.counted)
	return err
}

// free is the reserved room after the decoded bytes.
func (o *output) free() []byte {
	end := min(cap(o.b), o.counted)
	return o.b[len(o.b):end:end]
}

// unbounded is the Memory of a caller that reserves nothing.
type unbounded struct{}

func (unbounded) Reserve(int64) error { return nil }
func (unbounded) Left() int64         { return math.MaxInt64 }

// readFrom appends everything r yields, failing with errTooLarge as soon as
// more than limit bytes arrived. sizeHint is the first step.
func (o *output) readFrom(r io.Reader, sizeHint int) error {
	zeroReads := 0
	for want := sizeHint; ; want = 1 {
		if err := o.room(want); err != nil {
			return err
		}
		n, err := r.Read(o.free())
		o.b = o.b[:len(o.b)+n]
		switch {
		case o.used() > o.limit:
			return errTooLarge
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case n == 0:
			if zeroReads++; zeroReads > 100 {
				return io.ErrNoProgress
			}
		default:
			zeroReads = 0
		}
	}
}

// finish turns a decoding error into the status error to return, and
// gives back the caller's dst on failure.
func (o *output) finish(err error, enc string) ([]byte, error) {
	switch {
	case err == nil:
		return o.b, nil
	case errors.Is(err, errTooLarge):
		return o.b[:o.start], tooLarge(o.limit)
	case !isCorrupt(err):
		return o.b[:o.start], err // the budget's refusal
	default:
		return o.b[:o.start], corrupt(enc, err)
	}
}

// hint guesses the decoded size from the compressed one, to skip most of
// the doubling steps for typical log batches (5-10x compression).
func hint(body []byte) int { return 8 * len(body) }

type gzipState struct {
	br bytes.Reader
	zr gzip.Reader
}

var gzipPool sync.Pool

func gunzip(out *output, body []byte) ([]byte, error) {
	st, _ := gzipPool.Get().(*gzipState)
	if st == nil {
		st = new(gzipState)
	}
	defer func() { st.br.Reset(nil); gzipPool.Put(st) }()
	st.br.Reset(body)
	if err := st.zr.Reset(&st.br); err != nil {
		return out.finish(err, "gzip")
	}
	return out.finish(out.readFrom(&st.zr, gzipSize(body)), "gzip")
}

// gzipSize guesses the decoded size of a gzip body: its last member's
// trailer states that member's size (mod 4 GiB), the whole body's for the
// usual single member. A wrong guess costs a step of growth, or room
// reserved and never written.
func gzipSize(body []byte) int {
	if len(body) < 18 {
		return hint(body)
	}
	return max(int(binary.LittleEndian.Uint32(body[len(body)-4:])), 1)
}

type zstdState struct {
	dec *zstd.Decoder
	max int // the decoded-size limit dec is set to
}

var zstdPool sync.Pool

// unzstd decodes with DecodeAll rather than a stream: it decodes into the
// output itself, using it as the window, where a stream decoder keeps a
// window-sized ring (8 MiB for common encoders) per pooled decoder. The
// output gets, once, the most the body can decode to: its frames' and
// blocks' headers say (zstdBound), without decoding. DecodeAll never
// writes past that, so it never grows the output behind the budget's back
// (it does for a frame that goes on past a capacity it is given).
func unzstd(out *output, body []byte) ([]byte, error) {
	bound, least, err := zstdBound(body)
	switch {
	case err != nil:
		return out.finish(err, "zstd")
	case least > out.limit:
		return out.finish(errTooLarge, "zstd")
	}
	// Past the limit, the decoder stops after the block that crossed it:
	// room for that block too.
	if err := out.room(min(bound, out.limit+1) + zstdSlack); err != nil {
		return out.finish(err, "zstd")
	}
	st, _ := zstdPool.Get().(*zstdState)
	if st == nil {
		// A synchronous decoder: no goroutines to leak when the pool drops it.
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			return out.b, err
		}
		st = &zstdState{dec: dec}
	}
	defer zstdPool.Put(st)
	if st.max != out.limit {
		if err := st.dec.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(out.limit)), zstd.WithDecodeAllCapLimit(true)); err != nil {
			return out.b, err
		}
		st.max = out.limit
	}
	free := out.free()
	got, err := st.dec.DecodeAll(body, free[:0])
	// Past the limit, the decoder stops with ErrDecoderSizeExceeded, or with
	// an error of its own within a block of the output's end.
	full := errors.Is(err, zstd.ErrDecoderSizeExceeded) || bound > out.limit && cap(free)-len(got) <= 2*zstdSlack
	switch {
	case err != nil && full || err == nil && len(got) > out.limit:
		return out.finish(errTooLarge, "zstd")
	case err != nil:
		return out.finish(err, "zstd")
	case len(got) > 0 && &got[:1][0] != &free[:1][0]:
		return out.finish(errors.New("decoded outside the reserved buffer"), "zstd")
	}
	out.b = out.b[:len(out.b)+len(got)]
	return out.finish(nil, "zstd")
}

// zstdSlack is the most one zstd block decodes to (128 KiB), and the room
// the decoder's fast copies want past the output's end.
const zstdSlack = 128<<10 + 64

// zstdBound walks the frames of a zstd body, header and block headers,
// without decoding: bound is the most they decode to (a raw or RLE block
// its size, a compressed one at most a block, a frame at most the size it
// states), least what they surely decode to (raw and RLE blocks).
func zstdBound(body []byte) (bound, least int, err error) {
	for len(body) > 0 {
		var h zstd.Header
		rest, err := h.DecodeAndStrip(body)
		if err != nil {
			return 0, 0, err
		}
		if h.Skippable {
			if int(h.SkippableSize) > len(rest) {
				return 0, 0, io.ErrUnexpectedEOF
			}
			body = rest[h.SkippableSize:]
			continue
		}
		block := zstdSlack - 64
		if !h.SingleSegment {
			block = int(min(h.WindowSize, uint64(block)))
		}
		var most, sure int
		if body, most, sure, err = skipZstdBlocks(rest, h.HasCheckSum, block); err != nil {
			return 0, 0, err
		}
		if h.HasFCS {
			most = int(min(uint64(most), h.FrameContentSize))
		}
		bound, least = min(bound+most, 1<<40), min(least+sure, 1<<40)
	}
	return bound, least, nil
}

// skipZstdBlocks returns what follows the blocks of a frame and its
// checksum, the most they decode to (a compressed one to at most block
// bytes) and what they surely decode to (raw and RLE blocks).
func skipZstdBlocks(b []byte, checksum bool, block int) (rest []byte, most, sure int, err error) {
	for {
		if len(b) < 3 {
			return nil, 0, 0, io.ErrUnexpectedEOF
		}
		h := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		last, typ, n := h&1 == 1, h>>1&3, int(h>>3)
		size := n
		switch typ {
		case 1: // RLE: one byte, repeated n times
			size = 1
			sure += n
			most += n
		case 0: // raw
			sure += n
			most += n
		case 2:
			most += block
		default:
			return nil, 0, 0, errors.New("reserved block type")
		}
		if 3+size > len(b) {
			return nil, 0, 0, io.ErrUnexpectedEOF
		}
		b = b[3+size:]
		if last {
			break
		}
	}
	if checksum {
		if len(b) < 4 {
			return nil, 0, 0, io.ErrUnexpectedEOF
		}
		b = b[4:]
	}
	return b, most, sure, nil
}

type flateState struct {
	br   bytes.Reader
	raw  io.ReadCloser // flate reader, also a flate.Resetter
	zlib io.ReadCloser // created on first zlib body, also a zlib.Resetter
}

var flatePool sync.Pool

// looksZlib reports whether b starts with a valid zlib header: deflate
// method, window <= 32 KiB, and the header checksum.
func looksZlib(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

func inflate(out *output, body []byte) ([]byte, error) {
	st, _ := flatePool.Get().(*flateState)
	if st == nil {
		st = new(flateState)
	}
	defer func() { st.br.Reset(nil); flatePool.Put(st) }()
	if looksZlib(body) {
		err := st.readZlib(out, body)
		if err == nil || !isCorrupt(err) {
			return out.finish(err, "deflate")
		}
		// A raw deflate stream can start with bytes that pass the header
		// check by chance (1 in 31 of some block types): try it as raw.
		out.b = out.b[:out.start]
		if err2 := st.readRaw(out, body); err2 == nil || !isCorrupt(err2) {
			return out.finish(err2, "deflate")
		}
		return out.finish(err, "deflate")
	}
	return out.finish(st.readRaw(out, body), "deflate")
}

// isCorrupt reports whether a decoding error is about the data, not its
// size or the memory budget.
func isCorrupt(err error) bool {
	var he *httperr.Error
	return !errors.Is(err, errTooLarge) && !errors.As(err, &he)
}

func (st *flateState) readZlib(out *output, body []byte) error {
	st.br.Reset(body)
	if st.zlib == nil {
		zr, err := zlib.NewReader(&st.br)
		if err != nil {
			return err
		}
		st.zlib = zr
	} else if err := st.zlib.(zlib.Resetter).Reset(&st.br, nil); err != nil {
		return err
	}
	return out.readFrom(st.zlib, hint(body))
}

func (st *flateState) readRaw(out *output, body []byte) error {
	st.br.Reset(body)
	if st.raw == nil {
		st.raw = flate.NewReader(&st.br)
	} else if err := st.raw.(flate.Resetter).Reset(&st.br, nil); err != nil {
		return err
	}
	return out.readFrom(st.raw, hint(body))
}

type snappyState struct {
	br bytes.Reader
	sr *s2.Reader
}

// snappyPool holds readers of snappy's framed format, whose chunks hold at
// most 64 KiB: their buffers stay that small.
var snappyPool sync.Pool

// snappyMagic starts every framed snappy stream (and "S2sTwO" an S2 one).
const snappyMagic, s2Magic = "\xff\x06\x00\x00sNaPpY", "\xff\x06\x00\x00S2sTwO"

// s2StreamBytes is what a reader of an S2 stream may allocate for its
// blocks (up to 4 MiB each, encoded and decoded), reserved before it reads.
const s2StreamBytes = 10 << 20

func unsnappy(out *output, body []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(body, []byte(snappyMagic)):
		st, _ := snappyPool.Get().(*snappyState)
		if st == nil {
			st = &snappyState{sr: s2.NewReader(nil, s2.ReaderMaxBlockSize(64<<10))}
		}
		defer func() { st.br.Reset(nil); st.sr.Reset(nil); snappyPool.Put(st) }()
		st.br.Reset(body)
		st.sr.Reset(&st.br)
		return out.finish(out.readFrom(st.sr, hint(body)), "snappy")
	case bytes.HasPrefix(body, []byte(s2Magic)):
		// Rare: a reader of its own, its large buffers reserved, not pooled.
		if err := out.mem.Reserve(s2StreamBytes); err != nil {
			return out.finish(err, "snappy")
		}
		return out.finish(out.readFrom(s2.NewReader(bytes.NewReader(body)), hint(body)), "snappy")
	}
	// Block format: the decoded length leads the block, so an oversized
	// body is refused before anything is allocated.
	n, err := s2.DecodedLen(body)
	if err != nil {
		return out.finish(err, "snappy")
	}
	if n > out.limit {
		return out.finish(errTooLarge, "snappy")
	}
	if err := out.room(n); err != nil {
		return out.finish(err, "snappy")
	}
	if _, err := s2.Decode(out.b[len(out.b):len(out.b)+n], body); err != nil {
		return out.finish(err, "snappy")
	}
	out.b = out.b[:len(out.b)+n]
	return out.finish(nil, "snappy")
}
