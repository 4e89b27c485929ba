package blobsink

import (
	"errors"
	"io"
)

// piecesReader reads a block's pieces one after another as one stream,
// without copying them together: the body of an append. It seeks, as the
// SDK needs to size the body and to resend it.
type piecesReader struct {
	pieces    [][]byte
	size, off int64
}

func newPiecesReader(pieces [][]byte) *piecesReader {
	r := &piecesReader{pieces: pieces}
	for _, p := range pieces {
		r.size += int64(len(p))
	}
	return r
}

// Read implements io.Reader.
func (r *piecesReader) Read(buf []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := 0
	at := r.off // from the start of the current piece
	for _, p := range r.pieces {
		if at >= int64(len(p)) {
			at -= int64(len(p))
			continue
		}
		n += copy(buf[n:], p[at:])
		at = 0
		if n == len(buf) {
			break
		}
	}
	r.off += int64(n)
	return n, nil
}

// Seek implements io.Seeker.
func (r *piecesReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	}
	if offset < 0 {
		return 0, errors.New("cannot seek before the start of an append's body")
	}
	r.off = offset
	return offset, nil
}

// Close implements io.Closer: the pieces belong to the caller.
func (r *piecesReader) Close() error { return nil }
