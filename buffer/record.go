package buffer

import (
	"encoding/binary"
	"errors"
)

// WAL record types.
const (
	recBatch  = 1 // groups of lines: stream, key, data
	recIntent = 2 // a flush is about to write: stream, key, upTo LSN, bytes already stored, sink's intent
	recDone   = 3 // a flush finished: stream, key, upTo LSN
	// recFlush replaces recIntent: stream, key, first LSN, upTo LSN, bytes
	// already stored counted from the start of record first's data, sink's
	// intent. A flush after a restart may begin inside a record (the rest
	// of a flush the crash interrupted); counting from the record's start
	// keeps the count true across any number of restarts.
	recFlush = 4
)

// appendStreamKey encodes a group's stream and length-prefixed key.
func appendStreamKey(dst []byte, stream Stream, key []byte) []byte {
	dst = append(dst, byte(stream))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// batchRecord is a batch's WAL record in pieces: each group's few header
// bytes (stream, key, length) in head, and the group's lines where they
// are, so the lines go to the log without a copy.
type batchRecord struct {
	head  []byte
	ends  []int    // where each group's header ends in head
	parts [][]byte // head pieces and the groups' data, in record order
}

// encode lays out b's record: recBatch, the group count, then per group
// its stream, key and length-prefixed data. The parts point into b.
func (rec *batchRecord) encode(b *Batch) [][]byte {
	rec.head = append(rec.head[:0], recBatch)
	rec.head = binary.AppendUvarint(rec.head, uint64(len(b.groups)))
	rec.ends = rec.ends[:0]
	for i := range b.groups {
		g := &b.groups[i]
		rec.head = appendStreamKey(rec.head, g.Stream, g.Key)
		rec.head = binary.AppendUvarint(rec.head, uint64(len(g.Data)))
		rec.ends = append(rec.ends, len(rec.head))
	}
	// head is complete: slicing it now is safe.
	rec.parts = rec.parts[:0]
	start := 0
	for i := range b.groups {
		rec.parts = append(rec.parts, rec.head[start:rec.ends[i]], b.groups[i].Data)
		start = rec.ends[i]
	}
	if len(b.groups) == 0 {
		rec.parts = append(rec.parts, rec.head)
	}
	return rec.parts
}

// release drops the record's references to the batch's lines.
func (rec *batchRecord) release() { clear(rec.parts) }

func encodeIntent(stream Stream, key string, first, upTo uint64, stored int, intent []byte) []byte {
	dst := make([]byte, 0, 40+len(key)+len(intent))
	dst = append(dst, recFlush)
	dst = appendStreamKey(dst, stream, []byte(key))
	dst = binary.AppendUvarint(dst, first)
	dst = binary.AppendUvarint(dst, upTo)
	dst = binary.AppendUvarint(dst, uint64(stored))
	return append(dst, intent...)
}

func encodeDone(stream Stream, key string, upTo uint64) []byte {
	dst := make([]byte, 0, 16+len(key))
	dst = append(dst, recDone)
	dst = appendStreamKey(dst, stream, []byte(key))
	return binary.AppendUvarint(dst, upTo)
}

var errRecord = errors.New("damaged buffer record in the write-ahead log")

// reader decodes record fields.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errRecord
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errRecord
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) key() (Stream, []byte) {
	s := Stream(r.byte())
	return s, r.bytes()
}
