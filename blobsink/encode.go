package blobsink

import (
	"bytes"
	"compress/gzip"
	"fmt"

	"ingest/logline"
)

// encode splits data (pieces of one run of lines, each ending at a line's
// end) into blocks at line boundaries and compresses them. A block
// carries up to ChunkBytes of lines (Azure's append limit by default), so
// a flush of --flush-bytes, or of several chunks the buffer joined, is one
// append. A plain block keeps the pieces it is made of: the append sends
// them one after another, nothing is copied.
func (s *Sink) encode(data [][]byte, lines []logline.Summary, sums []uint32) ([]chunk, error) {
	// A block never exceeds a whole blob, so every blob stays under
	// --blob-max-bytes (unless one line alone is larger).
	full := int(min(int64(s.cfg.ChunkBytes), s.cfg.MaxBlobBytes))
	if s.cfg.Compression == CompressNone {
		return splitPlain(data, lines, sums, full), nil
	}
	// The compressor reads every byte anyway; one copy into a single run
	// costs little beside it.
	if len(data) > 1 {
		data = [][]byte{bytes.Join(data, nil)}
	}
	var one []byte
	if len(data) == 1 {
		one = data[0]
	}
	return s.encodeCompressed(one, full)
}

// splitPlain cuts the pieces into blocks of whole lines of up to limit
// bytes, each block the (parts of) pieces it spans. lines[i], when known
// (Count not zero), is what piece i holds, and sums[i] (when not 0) its
// CRC-32C; a block that takes a piece whole takes those too (nil: none is
// known).
func splitPlain(data [][]byte, lines []logline.Summary, sums []uint32, limit int) []chunk {
	var chunks []chunk
	var b chunk
	for i, p := range data {
		var known *logline.Summary
		if i < len(lines) && lines[i].Count > 0 {
			known = &lines[i]
		}
		for len(p) > 0 {
			n := cut(p, limit-b.raw)
			if n > limit-b.raw && b.raw > 0 {
				// Not even one more line fits behind what the block holds.
				chunks = append(chunks, b)
				b = chunk{}
				continue
			}
			whole := n == len(data[i])
			var m Meta
			if whole && known != nil {
				m = Meta(*known)
			} else {
				m = scanMeta(p[:n])
			}
			var sum uint32
			if whole && i < len(sums) {
				sum = sums[i]
			}
			b.add(p[:n], m, sum)
			p = p[n:]
		}
	}
	if b.raw > 0 {
		chunks = append(chunks, b)
	}
	return chunks
}

// encodeCompressed splits data into compressed blocks. A compressed block
// that comes out over ChunkBytes (incompressible lines grow a little) is
// split again with half the lines, until it fits.
func (s *Sink) encodeCompressed(data []byte, full int) ([]chunk, error) {
	var chunks []chunk
	limit := full
	for len(data) > 0 {
		n := cut(data, limit)
		raw := data[:n]
		encoded, err := s.compress(raw)
		if err != nil {
			return nil, err
		}
		if len(encoded) > s.cfg.ChunkBytes {
			if next := cut(data, n/2); next < n {
				limit = n / 2
				continue
			}
			if len(encoded) > MaxAppendBytes {
				return nil, fmt.Errorf("cannot append a %d-byte block: over the %d-byte limit (a line longer than a block?)", len(encoded), MaxAppendBytes)
			}
		}
		chunks = append(chunks, chunk{raw: n, encoded: [][]byte{encoded}, size: len(encoded), meta: scanMeta(raw)})
		data = data[n:]
		limit = full
	}
	return chunks, nil
}

// cut is the length of data's first block: whole lines up to limit bytes,
// or the first line alone when it is longer.
func cut(data []byte, limit int) int {
	if len(data) <= limit {
		return len(data)
	}
	if n := bytes.LastIndexByte(data[:max(limit, 0)], '\n') + 1; n > 0 {
		return n
	}
	if n := bytes.IndexByte(data, '\n') + 1; n > 0 {
		return n
	}
	return len(data)
}

// compress encodes one block as configured; plain blocks are raw itself.
func (s *Sink) compress(raw []byte) ([]byte, error) {
	switch s.cfg.Compression {
	case CompressZstd:
		return s.zenc.EncodeAll(raw, make([]byte, 0, len(raw)/4)), nil
	case CompressGzip:
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
		zw.Write(raw)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return raw, nil
}
