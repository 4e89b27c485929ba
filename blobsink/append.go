package blobsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// append appends one block, resolving a failed or ambiguous attempt: the
// append-position condition means a block either landed whole at offset or
// not at all, so on ErrAppendPosition the blob's bytes at offset say which.
// A blob changed behind our back or gone abandons the writer; when our
// block landed and another writer appended after it, append returns nil and
// the writer is abandoned all the same.
func (s *Sink) append(ctx context.Context, w *writer, offset int64, block [][]byte, size int) error {
	err := s.store.Append(ctx, w.name, offset, block...)
	if err == nil {
		s.met.blocks.Inc()
		return nil
	}
	if errors.Is(err, ErrNotFound) {
		s.met.errors.WithLabelValues("append").Inc()
		s.abandon(w, "the blob vanished")
		return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
	}
	if !errors.Is(err, ErrAppendPosition) {
		s.met.errors.WithLabelValues("append").Inc()
		return fmt.Errorf("cannot append to blob %s: %w", w.name, err)
	}
	info, serr := s.store.Stat(ctx, w.name)
	if errors.Is(serr, ErrNotFound) {
		s.abandon(w, "the blob vanished")
		return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
	}
	if serr != nil {
		s.met.errors.WithLabelValues("append").Inc()
		return fmt.Errorf("cannot append to blob %s (append position did not match) nor read its size: %w", w.name, serr)
	}
	end := offset + int64(size)
	if info.Size >= end {
		ours, rerr := s.holds(ctx, w.name, offset, block, size)
		if rerr != nil {
			s.met.errors.WithLabelValues("append").Inc()
			return fmt.Errorf("cannot append to blob %s (append position did not match) nor read it back: %w", w.name, rerr)
		}
		if ours {
			// An earlier attempt landed but its answer was lost.
			s.met.resolvedRetries.Inc()
			s.met.blocks.Inc()
			if info.Size > end {
				s.abandon(w, fmt.Sprintf("it is %d bytes, expected %d: another writer appended to it", info.Size, end))
			}
			return nil
		}
	}
	s.met.errors.WithLabelValues("foreign").Inc()
	why := fmt.Sprintf("it is %d bytes, expected %d: another writer appended to it or it was changed", info.Size, offset)
	s.abandon(w, why)
	return fmt.Errorf("cannot append to blob %s: %s; the next flush claims a new blob", w.name, why)
}

// abandon gives up a writer whose blob changed behind our back.
func (s *Sink) abandon(w *writer, why string) {
	if !w.open() {
		return
	}
	w.abandon(why)
	s.met.abandoned.Inc()
	s.log.Warn("blob changed behind the writer's back: abandoning it, the next flush claims a new blob", "blob", w.name, "why", why)
}

// holds reports whether the blob has exactly block (size bytes in pieces)
// at offset.
func (s *Sink) holds(ctx context.Context, name string, offset int64, block [][]byte, size int) (bool, error) {
	got, err := readRange(ctx, s.store, name, offset, size)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, p := range block {
		if !bytes.Equal(got[:len(p)], p) {
			return false, nil
		}
		got = got[len(p):]
	}
	return true, nil
}
