package query

import (
	"bytes"
	"context"
	"io"
	"math"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"ingest/blobsink"
	"ingest/logline"
)

// Reading a blob backwards, from its end, for newest-first queries with a
// limit (desc.go).
//
// A blob holds its lines in the order they arrived: in time order, except
// for events sent late (a shipper catching up, a client whose clock is
// behind or ahead). Nothing in a blob bounds the time of the lines before a
// given point, so Config.ReorderBytes (W) supplies the bound: an event is
// taken to be stored at most W bytes (of decoded lines) from its place in
// time order, so a line more than W bytes before another is not newer than
// it. A blob read backwards to depth P (decoded bytes from its end) then
// holds nothing unread newer than the oldest line read at depth P-W or
// less, nor than its EndTime metadata (backBlob.hi). A blob of at most W
// bytes is read whole, so its events are exact whatever their order.
// A blob whose metadata says how late a line can be stored (Lateness,
// blobsink.Meta.Late) is also bounded by proof, the lower bound winning: a
// line is older than none stored before it by more than that, so nothing
// unread is newer than the oldest line read plus Lateness. A blob of at
// most W bytes is then found its newest events without being read whole.
//
// Plain blobs are read with ranged reads from the end, 64 KiB first and
// doubling up to 1 MiB, split at '\n'; the line cut by a read is carried to
// the next one. Compressed blobs are a concatenation of independent frames,
// one per append (blobsink's encode); the last frame starts at the last
// frame magic from which the bytes up to the end decode (zstd checks its
// checksum, gzip its CRC-32), so frames are found and decoded one at a
// time, newest first. Memory per open blob: one read, a cut line of up to
// Config.MaxLineBytes, and for a compressed blob up to one stored frame
// (at most blobsink.MaxAppendBytes) while its start is looked for.

// Ranged read sizes: the first read of a blob, and the largest.
const (
	backFirstRead = 64 << 10
	backMaxRead   = 1 << 20
)

var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	gzipMagic = []byte{0x1f, 0x8b, 0x08}
)

// backBlob is a blob being read backwards.
type backBlob struct {
	c    candidate
	rank int // position in StartTime order: breaks time ties as oldest first does
	comp blobsink.Compression
	off  int64 // bytes [off, size) have been read
	read int   // size of the next ranged read
	// tail is read but not yet split into lines: for a plain blob, the end
	// of the line the last read cut; for a compressed one, the stored bytes
	// before the last frame found.
	tail    []byte
	long    bool  // plain: the cut line is over MaxLineBytes and is being skipped
	damaged bool  // compressed: bytes that are no frame were dropped
	depth   int64 // decoded bytes split into lines, from the end
	hi      int64 // no unread line is newer than this (under the reorder bound)
	steps   []backStep
	oldest  int64 // the oldest line read
}

// backStep is a run of lines read (about ReorderBytes/8 bytes), kept
// until they all lie ReorderBytes deep.
type backStep struct {
	depth  int64 // the depth of its deepest line
	oldest int64 // its oldest line time
}

func newBackBlob(c candidate, rank int) *backBlob {
	return &backBlob{c: c, rank: rank, comp: blobsink.CompressionOf(c.name), off: c.size, read: backFirstRead, hi: c.end, oldest: math.MaxInt64}
}

// finished reports whether every byte of the blob has been split into lines.
func (b *backBlob) finished() bool { return b.off == 0 && len(b.tail) == 0 && !b.long }

// backReader reads blobs backwards for one query: the line callback and
// the decoders, reused from blob to blob.
type backReader struct {
	r     *runner
	rr    RangeReader
	zdec  *zstd.Decoder
	gz    *gzip.Reader
	frame []byte // the last decoded frame
	joint []byte // a plain blob's line cut by a read, joined
	sc    lineScanner
	// line takes a line of b at depth; t is its time when ok (the
	// time field parsed, nothing else checked).
	line func(b *backBlob, line []byte, depth int64, t int64, ok bool)
}

func (br *backReader) close() {
	if br.zdec != nil {
		br.zdec.Close()
	}
}

// step reads the next range of b, from its end backwards, and hands each
// whole line in it to br.line with its depth (the decoded bytes from its
// start to the blob's end). A storage error is returned; bytes of a
// compressed blob that end no frame are dropped and the blob is counted as
// damaged.
func (br *backReader) step(ctx context.Context, b *backBlob) error {
	n := min(int64(b.read), b.off)
	buf, err := br.rr.ReadRange(ctx, b.c.name, b.off-n, int(n))
	if err != nil {
		return err
	}
	st := br.r.st
	st.BytesRead += n
	b.off -= n
	b.read = min(2*b.read, backMaxRead)
	// The lines come deepest last; every gran bytes of them close a step.
	w := int64(br.r.cfg.ReorderBytes)
	gran := max(w/8, 4<<10)
	cur, from := backStep{oldest: math.MaxInt64}, b.depth
	emit := func(line []byte, depth int64) {
		if len(line) > br.r.cfg.MaxLineBytes {
			st.LinesTooLong++
			return
		}
		st.LinesScanned++
		st.BytesDecoded += int64(len(line))
		t, ok := br.lineTime(line)
		if ok {
			b.oldest = min(b.oldest, t)
			cur.oldest = min(cur.oldest, t)
			cur.depth = depth
			if depth-from >= gran {
				b.steps = append(b.steps, cur)
				cur, from = backStep{oldest: math.MaxInt64}, depth
			}
		}
		br.line(b, line, depth, t, ok)
	}
	if b.comp == blobsink.CompressNone {
		br.plain(b, buf, emit)
	} else {
		br.frames(b, buf, emit)
	}
	if cur.oldest != math.MaxInt64 {
		b.steps = append(b.steps, cur)
	}
	folded := 0
	for _, s := range b.steps {
		if s.depth > b.depth-w {
			break
		}
		b.hi = min(b.hi, s.oldest)
		folded++
	}
	b.steps = append(b.steps[:0], b.steps[folded:]...)
	if late := b.c.late; late >= 0 && b.oldest < math.MaxInt64-late {
		b.hi = min(b.hi, b.oldest+late)
	}
	return nil
}

// plain splits buf, the bytes just before what b has read, into lines,
// joining its last one with the end of the line the previous read cut.
func (br *backReader) plain(b *backBlob, buf []byte, emit func([]byte, int64)) {
	if b.long {
		// What follows buf is the end of a line too long to keep: its
		// start follows the last '\n' of buf.
		j := bytes.LastIndexByte(buf, '\n')
		if j < 0 && b.off > 0 {
			b.depth += int64(len(buf))
			return
		}
		b.depth += int64(len(buf) - (j + 1))
		buf = buf[:j+1]
		b.long = false
		br.r.st.LinesTooLong++
	}
	cut := 0
	if b.off > 0 {
		cut = bytes.IndexByte(buf, '\n') + 1
		if cut == 0 {
			// All of buf is the start of the cut line.
			if len(buf)+len(b.tail) > br.r.cfg.MaxLineBytes {
				b.depth += int64(len(buf) + len(b.tail))
				b.long, b.tail = true, nil
				return
			}
			b.tail = append(buf, b.tail...)
			return
		}
	}
	// The line that starts after buf's last '\n' ends in the tail.
	j := bytes.LastIndexByte(buf, '\n') + 1
	if joint := append(append(br.joint[:0], buf[j:]...), b.tail...); len(joint) > 0 {
		b.depth += int64(len(joint))
		emit(joint, b.depth)
		br.joint = joint
	}
	br.lines(b, buf[cut:j], emit)
	b.tail = append(b.tail[:0], buf[:cut]...)
}

// frames decodes the whole frames at the end of the stored bytes read so
// far, newest first, and splits each into lines.
func (br *backReader) frames(b *backBlob, buf []byte, emit func([]byte, int64)) {
	raw := buf
	if len(b.tail) > 0 {
		raw = append(buf, b.tail...)
	}
	magic := zstdMagic
	if b.comp == blobsink.CompressGzip {
		magic = gzipMagic
	}
	for len(raw) > 0 {
		found := false
		for p := bytes.LastIndex(raw, magic); p >= 0; p = bytes.LastIndex(raw[:p], magic) {
			if br.decode(b.comp, raw[p:]) {
				br.lines(b, br.frame, emit)
				raw, found = raw[:p], true
				break
			}
		}
		if found {
			continue
		}
		if b.off > 0 && len(raw) <= blobsink.MaxAppendBytes {
			break // the frame starts further back
		}
		// No frame ends where these bytes end (a torn or damaged frame):
		// drop them back to the last frame magic and go on before it.
		if !b.damaged {
			br.r.st.BlobsDamaged++
			b.damaged = true
		}
		p := bytes.LastIndex(raw, magic)
		if p < 0 {
			raw, b.off = nil, 0 // nothing left to tell frames by
			break
		}
		raw = raw[:p]
	}
	b.tail = raw
}

// decode decodes src, which must be whole frames up to its end, into
// br.frame.
func (br *backReader) decode(c blobsink.Compression, src []byte) bool {
	switch c {
	case blobsink.CompressZstd:
		if br.zdec == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxZstdWindow))
			if err != nil {
				return false
			}
			br.zdec = d
		}
		out, err := br.zdec.DecodeAll(src, br.frame[:0])
		if err != nil {
			return false
		}
		br.frame = out
		return true
	case blobsink.CompressGzip:
		rd := bytes.NewReader(src)
		var err error
		if br.gz == nil {
			br.gz, err = gzip.NewReader(rd)
		} else {
			err = br.gz.Reset(rd)
		}
		if err != nil {
			return false
		}
		w := bytes.NewBuffer(br.frame[:0])
		if _, err := io.Copy(w, io.LimitReader(br.gz, maxZstdWindow)); err != nil {
			return false
		}
		br.frame = w.Bytes()
		return rd.Len() == 0
	}
	return false
}

// lines hands the lines of body, which ends where b's read lines begin,
// to emit from the last one back, and deepens b by body.
func (br *backReader) lines(b *backBlob, body []byte, emit func([]byte, int64)) {
	base := b.depth
	for end := len(body); end > 0; {
		start := bytes.LastIndexByte(body[:end-1], '\n') + 1
		emit(body[start:end], base+int64(len(body)-start))
		end = start
	}
	b.depth = base + int64(len(body))
}

// lineTime reads a line's time field, for the reorder bound.
func (br *backReader) lineTime(line []byte) (int64, bool) {
	const end = timeOff + len(logline.TimeLayout)
	if len(line) <= end {
		return 0, false
	}
	return br.sc.time(line[timeOff:end])
}
