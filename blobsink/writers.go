package blobsink

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// setWriter records the writer a key continues with after a flush: ws's
// writer number current, or, when that one was abandoned, the blob claimed
// after it in this flush (empty and ours).
func (s *Sink) setWriter(ctx context.Context, key string, ws []*writer, current int) {
	// Older blobs of this flush whose metadata did not get through are
	// finished now, best effort (recovery covers a crash before that): a
	// key's next flush publishes only its current writer, so a failure is
	// logged and counted.
	for _, w := range ws[:current] {
		if !w.metaSent && w.state != writerAbandoned {
			if err := s.publish(ctx, w); err != nil {
				s.met.errors.WithLabelValues("metadata").Inc()
				s.log.Warn("cannot update the metadata of a filled blob", "blob", w.name, "err", err)
			}
		}
	}
	if !ws[current].open() && current+1 < len(ws) {
		current++
	}
	w := ws[current]
	s.mu.Lock()
	w.used, w.evictable = time.Now(), w.metaSent || !w.open()
	s.writers[key] = w
	s.mu.Unlock()
}

// writerFor returns the key's open writer: the current one, or a new blob
// claimed after a retired or abandoned one, or after the highest number
// listed at the first flush since the start. It also retires writers idle
// for long.
func (s *Sink) writerFor(ctx context.Context, key string) (*writer, error) {
	s.mu.Lock()
	w := s.writers[key]
	now := time.Now()
	for k, o := range s.writers {
		if now.Sub(o.used) > 30*time.Minute && o.evictable {
			delete(s.writers, k)
		}
	}
	s.mu.Unlock()
	if w != nil && w.open() && !w.metaSent && (w.meta.Count > 0 || w.aheadSet) {
		err := s.publish(ctx, w)
		switch {
		case errors.Is(err, ErrNotFound):
			s.abandon(w, "the blob vanished")
		case err != nil:
			return nil, fmt.Errorf("cannot update metadata of blob %s: %w", w.name, err)
		}
	}
	if w != nil {
		if w.open() {
			return w, nil
		}
		return s.claim(ctx, key, w.seq+1)
	}
	// After a start, never append to an existing blob: it may be another
	// instance's, or hold a block torn by a crash. Claim past the highest.
	high := 0
	err := s.store.List(ctx, key+"/", func(b BlobInfo) error {
		if p, seq, ok := ParseBlobName(b.Name); ok && p == key && seq > high {
			high = seq
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list blobs under %s/: %w", key, err)
	}
	return s.claim(ctx, key, s.firstSeq(high))
}
