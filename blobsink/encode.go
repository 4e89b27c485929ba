package blobsink

import (
	"bytes"
	"compress/gzip"
	"fmt"
)

// encode splits data into blocks at line boundaries and compresses them.
func (s *Sink) encode(data []byte) ([]chunk, error) {
	var chunks []chunk
	// A block never exceeds a whole blob, so every blob stays under
	// --blob-max-bytes (unless one line alone is larger).
	limit := int(min(int64(s.cfg.ChunkBytes), s.cfg.MaxBlobBytes))
	for len(data) > 0 {
		n := len(data)
		if n > limit {
			n = bytes.LastIndexByte(data[:limit], '\n') + 1
			if n == 0 { // one line longer than a block: send it alone
				n = bytes.IndexByte(data, '\n') + 1
				if n == 0 {
					n = len(data)
				}
			}
		}
		raw := data[:n]
		data = data[n:]
		c := chunk{raw: raw, meta: scanMeta(raw)}
		switch s.cfg.Compression {
		case CompressZstd:
			c.encoded = s.zenc.EncodeAll(raw, make([]byte, 0, len(raw)/4))
		case CompressGzip:
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
			zw.Write(raw)
			if err := zw.Close(); err != nil {
				return nil, err
			}
			c.encoded = buf.Bytes()
		default:
			c.encoded = raw
		}
		if len(c.encoded) > MaxAppendBytes {
			return nil, fmt.Errorf("cannot append a %d-byte block: over the %d-byte limit (a line longer than a block?)", len(c.encoded), MaxAppendBytes)
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}
