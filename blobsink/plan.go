package blobsink

import (
	"context"
	"hash/crc32"
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

// chunk is one planned block.
type chunk struct {
	raw     []byte
	encoded []byte
	meta    Meta
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// plan places every chunk, starting in w and rolling over to a newly
// claimed blob where a chunk does not fit, and returns the intent and the
// writers of the blobs it names (w first).
func (s *Sink) plan(ctx context.Context, key string, w *writer, chunks []chunk) (intent, []*writer, error) {
	var in intent
	ws := []*writer{w}
	in.Blobs = append(in.Blobs, intentBlob{Name: w.name, Base: w.meta})
	offset, blocks := w.size, w.blocks
	for _, c := range chunks {
		if !fits(&s.cfg, offset, blocks, len(c.encoded)) {
			nw, err := s.claim(ctx, key, ws[len(ws)-1].seq+1)
			if err != nil {
				return intent{}, nil, err
			}
			ws = append(ws, nw)
			in.Blobs = append(in.Blobs, intentBlob{Name: nw.name})
			offset, blocks = 0, 0
		}
		in.Chunks = append(in.Chunks, intentChunk{Blob: len(ws) - 1, Offset: offset, Raw: len(c.raw), Stored: len(c.encoded),
			Sum: crc32.Checksum(c.encoded, crcTable), Meta: c.meta})
		offset += int64(len(c.encoded))
		blocks++
	}
	return in, ws, nil
}
