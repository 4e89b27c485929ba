package intake

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"ingest/internal/httperr"
)

// MaxZstdWindow caps the window a zstd frame may ask for. The decoder keeps
// a window-sized history, so a hostile frame header could otherwise make it
// allocate up to 512 MiB before producing a byte. Every zstd level up to 19
// uses at most 8 MiB; 32 MiB also covers --ultra -20.
const MaxZstdWindow = 32 << 20

// Memory is a request's share of the memory budget (*admission.Hold):
// Reserve adds n bytes to it, or returns the refusal to answer with.
type Memory interface {
	Reserve(n int64) error
}

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
func Decompress(dst, body []byte, encoding string, maxBytes int, mem Memory) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = int(^uint(0) >> 2)
	}
	enc := strings.TrimSpace(encoding)
	if len(body) == 0 && knownEncoding(enc) {
		return dst, nil // an empty body decodes to nothing whatever the encoding
	}
	out := output{b: dst, start: len(dst), limit: maxBytes, mem: mem}
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
	mem     Memory
	counted int // bytes past start reserved from mem
}

// minStep is the least an output grows or reserves by.
const minStep = 64 << 10

// used is how many decoded bytes the output holds.
func (o *output) used() int { return len(o.b) - o.start }

// reserve adds n bytes to what the output has reserved.
func (o *output) reserve(n int) error {
	if n <= 0 {
		return nil
	}
	if o.mem != nil {
		if err := o.mem.Reserve(int64(n)); err != nil {
			return err
		}
	}
	o.counted += n
	return nil
}

// room makes at least want bytes (at most what the limit leaves, plus one
// to see a body past it) free and reserved after the decoded ones: from
// the capacity b has, else in a new buffer, which grows by doubling while
// small, by a quarter past 4 MiB, so that the last step near the budget
// asks for little more than is needed.
func (o *output) room(want int) error {
	used := o.used()
	want = min(max(want, 1), o.limit+1-used)
	if want <= 0 {
		return errTooLarge
	}
	need := used + want
	if need <= o.counted && len(o.b)+want <= cap(o.b) {
		return nil
	}
	if o.start+need <= cap(o.b) { // capacity the caller had, not reserved yet
		return o.reserve(min(max(need, o.counted+minStep), cap(o.b)-o.start) - o.counted)
	}
	grown := 2 * (cap(o.b) - o.start)
	if grown > 8<<20 {
		grown = (cap(o.b) - o.start) * 5 / 4
	}
	grown = min(max(grown, need, minStep), o.limit+1)
	if err := o.reserve(grown - o.counted); err != nil {
		return err
	}
	b := make([]byte, len(o.b), o.start+grown)
	copy(b, o.b)
	o.b = b
	return nil
}

// readFrom appends everything r yields, failing with errTooLarge as soon as
// more than limit bytes arrived. sizeHint is the first step.
func (o *output) readFrom(r io.Reader, sizeHint int) error {
	zeroReads := 0
	for want := sizeHint; ; want = minStep {
		if err := o.room(want); err != nil {
			return err
		}
		n, err := r.Read(o.b[len(o.b):min(cap(o.b), o.start+o.counted)])
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
	return out.finish(out.readFrom(&st.zr, hint(body)), "gzip")
}

type zstdState struct {
	dec *zstd.Decoder
	max int // the decoded-size limit dec is set to
}

var zstdPool sync.Pool

// unzstd decodes with DecodeAll rather than a stream: it decodes into the
// output itself, using it as the window, where a stream decoder keeps a
// window-sized ring (8 MiB for common encoders) per pooled decoder. It
// decodes into the capacity reserved so far and no further (the decoder's
// cap limit); when a frame does not fit, the output grows and decoding
// starts again, at most about twice the work of one pass. A frame that
// states its size (most do) gets that capacity at once.
func unzstd(out *output, body []byte) ([]byte, error) {
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
	want := hint(body)
	var h zstd.Header
	if h.Decode(body) == nil && h.HasFCS {
		if h.FrameContentSize > uint64(out.limit) {
			return out.finish(errTooLarge, "zstd")
		}
		// The size, and room for the decoder's fast copies past the end.
		want = int(h.FrameContentSize) + zstdOverrun
	}
	for {
		if err := out.room(want); err != nil {
			return out.finish(err, "zstd")
		}
		// Decode into the free tail of the output: DecodeAll measures the
		// limit against the whole slice, prefix included, where a frame
		// states its size.
		end := min(cap(out.b), out.start+out.counted)
		free := out.b[len(out.b):end:end]
		got, err := st.dec.DecodeAll(body, free[:0])
		if err == nil {
			if len(got) > 0 && &got[:1][0] != &free[:1][0] {
				return out.finish(errors.New("decoded outside the reserved buffer"), "zstd")
			}
			out.b = out.b[:len(out.b)+len(got)]
			return out.finish(nil, "zstd")
		}
		// Past the capacity, the decoder stops within a block of its end,
		// with ErrDecoderSizeExceeded or an error of its own; any other
		// error is in the data.
		full := errors.Is(err, zstd.ErrDecoderSizeExceeded) || cap(free)-len(got) <= zstdBlock+zstdOverrun
		switch {
		case !full:
			return out.finish(err, "zstd")
		case out.counted > out.limit:
			return out.finish(errTooLarge, "zstd")
		}
		want = out.counted - out.used() + zstdBlock // grow and decode again
	}
}

// zstdBlock is the most one zstd block decodes to; zstdOverrun is the room
// the decoder's fast copies want past the output's end.
const zstdBlock, zstdOverrun = 128 << 10, 64

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
		if err := out.reserve(s2StreamBytes); err != nil {
			return out.finish(err, "snappy")
		}
		out.counted -= s2StreamBytes // held for the reader, not for the output
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
