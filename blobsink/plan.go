package blobsink

import (
	"context"
	"hash/crc32"

	"ingest/internal/disk"
)

// intent is what Flush journals before writing: every block it will append,
// in order, so that recovery can tell which of them landed.
type intent struct {
	Blobs  []intentBlob  `json:"b"`
	Chunks []intentChunk `json:"c"`
}

type intentBlob struct {
	Name string `json:"n"`
	Base Meta   `json:"m"` // metadata before this flush
}

type intentChunk struct {
	Blob   int    `json:"b"` // index into Blobs
	Offset int64  `json:"o"`
	Raw    int    `json:"r"`           // bytes of data it carries
	Stored int    `json:"s"`           // bytes appended (compressed size)
	Sum    uint32 `json:"k,omitempty"` // CRC-32C of the stored bytes: tells our block from another writer's
	Meta   Meta   `json:"m"`
}

// chunk is one planned block, in pieces.
type chunk struct {
	raw     int      // bytes of lines it carries
	encoded [][]byte // the block as appended: the lines themselves, or one compressed frame
	size    int      // bytes of encoded in all
	meta    Meta
	sum     uint32 // the CRC-32C of encoded when known, else 0
}

// add appends a piece of plain lines whose metadata is m and whose
// CRC-32C is sum (0: not known) to the block.
func (c *chunk) add(lines []byte, m Meta, sum uint32) {
	if len(c.encoded) > 0 {
		m = c.meta.Merge(m)
		sum = 0 // a sum of two pieces is not theirs joined
	}
	c.encoded = append(c.encoded, lines)
	c.raw += len(lines)
	c.size += len(lines)
	c.meta = m
	c.sum = sum
}

// checksum is the CRC-32C of the block's bytes.
func (c *chunk) checksum() uint32 {
	if c.sum != 0 {
		return c.sum
	}
	var sum uint32
	for _, p := range c.encoded {
		sum = crc32.Update(sum, disk.Castagnoli, p)
	}
	return sum
}

// plan places every chunk, starting in w and rolling over to a newly
// claimed blob where a chunk does not fit, and returns the intent and the
// writers of the blobs it names (w first).
func (s *Sink) plan(ctx context.Context, key string, w *writer, chunks []chunk) (intent, []*writer, error) {
	var in intent
	ws := []*writer{w}
	in.Blobs = append(in.Blobs, intentBlob{Name: w.name, Base: w.meta})
	offset, blocks := w.size, w.blocks
	for _, c := range chunks {
		if !fits(&s.cfg, offset, blocks, c.size) {
			nw, err := s.claim(ctx, key, ws[len(ws)-1].seq+1)
			if err != nil {
				return intent{}, nil, err
			}
			ws = append(ws, nw)
			in.Blobs = append(in.Blobs, intentBlob{Name: nw.name})
			offset, blocks = 0, 0
		}
		in.Chunks = append(in.Chunks, intentChunk{Blob: len(ws) - 1, Offset: offset, Raw: c.raw, Stored: c.size,
			Sum: c.checksum(), Meta: c.meta})
		offset += int64(c.size)
		blocks++
	}
	return in, ws, nil
}
