package query

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"ingest/blobsink"
)

// maxZstdWindow caps the zstd window a blob may ask for. The writer's frames
// are one flush each (a few MiB); the cap keeps a hostile or corrupt frame
// header from making the decoder allocate gigabytes.
const maxZstdWindow = 128 << 20

// readBufSize is each open blob's read buffer; longer lines spill into a
// line buffer of their own.
const readBufSize = 64 << 10

// OpenBlob streams a blob's lines, decompressed according to its name
// (.log.zst: zstd, .log.gz: gzip, each a concatenation of independent frames,
// one per flush), for `ingest cat`. Closing it releases the decoder and the
// blob stream.
func OpenBlob(ctx context.Context, store Store, name string) (io.ReadCloser, error) {
	rc, err := store.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("cannot open blob %s: %w", name, err)
	}
	dec, err := decode(blobsink.CompressionOf(name), rc, nil)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("cannot read blob %s: %w", name, err)
	}
	return dec, nil
}

// decoders reuses zstd decoders between the blobs of one query: each holds
// buffers the size of a frame, and a query reads blob after blob.
type decoders struct {
	free []*zstd.Decoder
}

// decode wraps a blob stream in the decoder its compression needs. Closing
// the result closes rc too (and returns a zstd decoder to pool, if any).
func decode(c blobsink.Compression, rc io.ReadCloser, pool *decoders) (io.ReadCloser, error) {
	switch c {
	case blobsink.CompressZstd:
		var d *zstd.Decoder
		if pool != nil && len(pool.free) > 0 {
			d = pool.free[len(pool.free)-1]
			pool.free = pool.free[:len(pool.free)-1]
			if err := d.Reset(rc); err != nil {
				d.Close()
				return nil, err
			}
		} else {
			var err error
			d, err = zstd.NewReader(rc,
				zstd.WithDecoderConcurrency(1), // synchronous: no goroutines per open blob
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(maxZstdWindow))
			if err != nil {
				return nil, err
			}
		}
		return &decodedReader{r: d, close: func() error {
			if pool != nil && d.Reset(nil) == nil {
				pool.free = append(pool.free, d)
			} else {
				d.Close()
			}
			return rc.Close()
		}}, nil
	case blobsink.CompressGzip:
		br := bufio.NewReaderSize(rc, 32<<10)
		if _, err := br.Peek(1); err == io.EOF {
			// A created but never appended blob: no frames, no lines.
			return &decodedReader{r: eofReader{}, close: rc.Close}, nil
		}
		z, err := gzip.NewReader(br) // multistream: every flush is one member
		if err != nil {
			return nil, err
		}
		return &decodedReader{r: z, close: func() error { z.Close(); return rc.Close() }}, nil
	}
	return rc, nil
}

// close releases the pooled decoders.
func (p *decoders) close() {
	for _, d := range p.free {
		d.Close()
	}
	p.free = nil
}

type decodedReader struct {
	r     io.Reader
	close func() error
}

func (d *decodedReader) Read(p []byte) (int, error) { return d.r.Read(p) }
func (d *decodedReader) Close() error               { return d.close() }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// countingReader counts the bytes read from the store and remembers the
// store's own read error, to tell a storage failure (returned to the caller)
// from a damaged blob (counted and skipped).
type countingReader struct {
	rc  io.ReadCloser
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

func (c *countingReader) Close() error { return c.rc.Close() }

// lineReader splits a stream into lines with a bounded buffer.
type lineReader struct {
	br      *bufio.Reader
	long    []byte // a line longer than br's buffer, assembled
	max     int
	tooLong int64 // lines skipped for length
	pending error // returned after a final unterminated line
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufSize), max: max}
}

// block returns the complete lines already buffered, ending with a '\n',
// without copying (valid until the next call), reading more first when
// nothing is buffered. It returns nothing when no whole line is buffered
// (a line longer than the buffer, the end of the stream or an error): next
// then takes the next line.
func (lr *lineReader) block() []byte {
	if lr.pending != nil {
		return nil
	}
	if lr.br.Buffered() == 0 {
		lr.br.Peek(1) // fill; an error comes again from next
	}
	buf, _ := lr.br.Peek(lr.br.Buffered())
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 {
		return nil
	}
	lr.br.Discard(i + 1)
	return buf[:i+1]
}

// next returns the next line, with its '\n' unless it is a final line
// without one. The slice is valid until the next call. Lines over max bytes
// are skipped (counted in tooLong). At the end it returns io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	if lr.pending != nil {
		return nil, lr.pending
	}
	lr.long = lr.long[:0]
	skipping := false
	for {
		b, err := lr.br.ReadSlice('\n')
		switch {
		case err == nil:
			if skipping {
				lr.tooLong++
				skipping = false
				continue
			}
			if len(lr.long) == 0 {
				if len(b) > lr.max {
					lr.tooLong++
					continue
				}
				return b, nil
			}
			if len(lr.long)+len(b) > lr.max {
				lr.tooLong++
				lr.long = lr.long[:0]
				continue
			}
			lr.long = append(lr.long, b...)
			return lr.long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if skipping {
				continue
			}
			if len(lr.long)+len(b) > lr.max {
				skipping = true
				lr.long = lr.long[:0]
				continue
			}
			lr.long = append(lr.long, b...)
		default:
			// End of stream (or an error) with maybe an unterminated tail.
			if skipping {
				lr.tooLong++
				return nil, err
			}
			if len(lr.long)+len(b) == 0 {
				return nil, err
			}
			if len(lr.long)+len(b) > lr.max {
				lr.tooLong++
				return nil, err
			}
			lr.pending = err
			if len(lr.long) == 0 {
				return b, nil
			}
			lr.long = append(lr.long, b...)
			return lr.long, nil
		}
	}
}
