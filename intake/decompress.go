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

// Decompress appends the body decoded per encoding (the Content-Encoding
// header: "", "identity", "gzip", "x-gzip", "zstd", "deflate", "snappy",
// case-insensitive) to dst and returns the extended slice.
//
// The decoded size is limited to maxBytes (no limit when maxBytes <= 0):
// past it Decompress stops decoding and returns a 413 *httperr.Error. The
// output grows step by step and never past the limit, so a gzip bomb costs
// at most about twice maxBytes (old and new buffer while one grows), and
// nothing more when dst already has room. An unknown encoding is a 415 *httperr.Error, corrupt data a 400.
//
// "deflate" accepts both the zlib-wrapped stream RFC 9110 specifies and the
// raw deflate many clients send. "snappy" accepts the framed stream format
// and the block format (what Prometheus remote write sends).
//
// Decoders come from pools and are reset per call. For identity bodies the
// bytes are copied; callers on the hot path may skip the call instead.
func Decompress(dst, body []byte, encoding string, maxBytes int) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = int(^uint(0) >> 2)
	}
	enc := strings.TrimSpace(encoding)
	if len(body) == 0 && knownEncoding(enc) {
		return dst, nil // an empty body decodes to nothing whatever the encoding
	}
	switch {
	case enc == "" || strings.EqualFold(enc, "identity"):
		if len(body) > maxBytes {
			return dst, tooLarge(maxBytes)
		}
		return append(dst, body...), nil
	case strings.EqualFold(enc, "gzip") || strings.EqualFold(enc, "x-gzip"):
		return gunzip(dst, body, maxBytes)
	case strings.EqualFold(enc, "zstd"):
		return unzstd(dst, body, maxBytes)
	case strings.EqualFold(enc, "deflate"):
		return inflate(dst, body, maxBytes)
	case strings.EqualFold(enc, "snappy") || strings.EqualFold(enc, "x-snappy-framed"):
		return unsnappy(dst, body, maxBytes)
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

// readLimited appends everything r yields to dst, failing with errTooLarge
// as soon as more than limit bytes arrived. It grows dst by doubling but
// never beyond limit+1 bytes of new data, so memory stays bounded by the
// limit whatever the compression ratio.
func readLimited(dst []byte, r io.Reader, limit int, sizeHint int) ([]byte, error) {
	start := len(dst)
	ceiling := start + limit + 1 // reading this many bytes proves the body is too large
	if sizeHint < 64<<10 {
		sizeHint = 64 << 10
	}
	zeroReads := 0
	for {
		if len(dst)-start > limit {
			return dst[:start], errTooLarge
		}
		if len(dst) == cap(dst) {
			want := 2 * (cap(dst) - start)
			if want < sizeHint {
				want = sizeHint
			}
			if start+want > ceiling {
				want = ceiling - start
			}
			dst = append(dst[:cap(dst)], make([]byte, start+want-cap(dst))...)[:len(dst)]
		}
		end := cap(dst)
		if end > ceiling {
			end = ceiling
		}
		n, err := r.Read(dst[len(dst):end])
		dst = dst[:len(dst)+n]
		switch {
		case err == io.EOF:
			if len(dst)-start > limit {
				return dst[:start], errTooLarge
			}
			return dst, nil
		case err != nil:
			return dst[:start], err
		case n == 0:
			if zeroReads++; zeroReads > 100 {
				return dst[:start], io.ErrNoProgress
			}
		default:
			zeroReads = 0
		}
	}
}

// finish turns a readLimited error into the status error to return.
func finish(dst []byte, err error, enc string, maxBytes int) ([]byte, error) {
	switch {
	case err == nil:
		return dst, nil
	case errors.Is(err, errTooLarge):
		return dst, tooLarge(maxBytes)
	default:
		return dst, corrupt(enc, err)
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

func gunzip(dst, body []byte, maxBytes int) ([]byte, error) {
	st, _ := gzipPool.Get().(*gzipState)
	if st == nil {
		st = new(gzipState)
	}
	defer func() { st.br.Reset(nil); gzipPool.Put(st) }()
	st.br.Reset(body)
	if err := st.zr.Reset(&st.br); err != nil {
		return dst, corrupt("gzip", err)
	}
	out, err := readLimited(dst, &st.zr, maxBytes, hint(body))
	return finish(out, err, "gzip", maxBytes)
}

type zstdState struct {
	dec *zstd.Decoder
	max int // the decoded-size limit dec is set to
}

var zstdPool sync.Pool

// unzstd decodes with DecodeAll rather than a stream: it decodes into dst
// itself, using the output as the window, where a stream decoder keeps a
// window-sized ring (8 MiB for common encoders) per pooled decoder. The
// decoder's own size limit stops it block by block, so memory stays
// bounded by the limit as with the streaming decoders.
func unzstd(dst, body []byte, maxBytes int) ([]byte, error) {
	st, _ := zstdPool.Get().(*zstdState)
	if st == nil {
		// A synchronous decoder: no goroutines to leak when the pool drops it.
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(MaxZstdWindow))
		if err != nil {
			return dst, err
		}
		st = &zstdState{dec: dec}
	}
	defer zstdPool.Put(st)
	if st.max != maxBytes {
		if err := st.dec.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(maxBytes))); err != nil {
			return dst, err
		}
		st.max = maxBytes
	}
	// Decode into the free tail of dst: DecodeAll measures the limit against
	// the whole slice, prefix included, where a frame states its size.
	start := len(dst)
	out, err := st.dec.DecodeAll(body, dst[start:start])
	switch {
	case err == nil:
		if len(out) > 0 && cap(dst) > start && &out[0] == &dst[:start+1][start] {
			return dst[:start+len(out)], nil // decoded in place
		}
		return append(dst, out...), nil
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return dst[:start], tooLarge(maxBytes)
	}
	return dst[:start], corrupt("zstd", err)
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

func inflate(dst, body []byte, maxBytes int) ([]byte, error) {
	st, _ := flatePool.Get().(*flateState)
	if st == nil {
		st = new(flateState)
	}
	defer func() { st.br.Reset(nil); flatePool.Put(st) }()
	if looksZlib(body) {
		out, err := st.readZlib(dst, body, maxBytes)
		if err == nil || errors.Is(err, errTooLarge) {
			return finish(out, err, "deflate", maxBytes)
		}
		// A raw deflate stream can start with bytes that pass the header
		// check by chance (1 in 31 of some block types): try it as raw.
		if out2, err2 := st.readRaw(dst, body, maxBytes); err2 == nil || errors.Is(err2, errTooLarge) {
			return finish(out2, err2, "deflate", maxBytes)
		}
		return finish(out, err, "deflate", maxBytes)
	}
	out, err := st.readRaw(dst, body, maxBytes)
	return finish(out, err, "deflate", maxBytes)
}

func (st *flateState) readZlib(dst, body []byte, maxBytes int) ([]byte, error) {
	st.br.Reset(body)
	if st.zlib == nil {
		zr, err := zlib.NewReader(&st.br)
		if err != nil {
			return dst, err
		}
		st.zlib = zr
	} else if err := st.zlib.(zlib.Resetter).Reset(&st.br, nil); err != nil {
		return dst, err
	}
	return readLimited(dst, st.zlib, maxBytes, hint(body))
}

func (st *flateState) readRaw(dst, body []byte, maxBytes int) ([]byte, error) {
	st.br.Reset(body)
	if st.raw == nil {
		st.raw = flate.NewReader(&st.br)
	} else if err := st.raw.(flate.Resetter).Reset(&st.br, nil); err != nil {
		return dst, err
	}
	return readLimited(dst, st.raw, maxBytes, hint(body))
}

type snappyState struct {
	br bytes.Reader
	sr *s2.Reader
}

var snappyPool sync.Pool

// snappyMagic starts every framed snappy stream (and "S2sTwO" an S2 one).
const snappyMagic, s2Magic = "\xff\x06\x00\x00sNaPpY", "\xff\x06\x00\x00S2sTwO"

func unsnappy(dst, body []byte, maxBytes int) ([]byte, error) {
	if !bytes.HasPrefix(body, []byte(snappyMagic)) && !bytes.HasPrefix(body, []byte(s2Magic)) {
		// Block format: the decoded length leads the block, so an oversized
		// body is refused before anything is allocated.
		n, err := s2.DecodedLen(body)
		if err != nil {
			return dst, corrupt("snappy", err)
		}
		if n > maxBytes {
			return dst, tooLarge(maxBytes)
		}
		start := len(dst)
		if cap(dst)-start < n {
			dst = append(dst[:cap(dst)], make([]byte, start+n-cap(dst))...)[:start]
		}
		if _, err := s2.Decode(dst[start:start+n], body); err != nil {
			return dst[:start], corrupt("snappy", err)
		}
		return dst[:start+n], nil
	}
	st, _ := snappyPool.Get().(*snappyState)
	if st == nil {
		st = new(snappyState)
		st.sr = s2.NewReader(nil)
	}
	defer func() { st.br.Reset(nil); st.sr.Reset(nil); snappyPool.Put(st) }()
	st.br.Reset(body)
	st.sr.Reset(&st.br)
	out, err := readLimited(dst, st.sr, maxBytes, hint(body))
	return finish(out, err, "snappy", maxBytes)
}
