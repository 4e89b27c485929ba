package blobsink

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"ingest/logline"
)

// Counter keeps count of what blobs hold (the stats table). After each
// flush that appended to a blob, and when recovery finishes a flush a
// crash interrupted, it is told the blob's counts so far (held), before
// the flush counts as done: a count that fails fails the flush, and its
// retry tells the counter again before it journals anything new. Telling
// the same counts twice must change nothing, so every stored line is
// counted exactly once.
type Counter interface {
	Count(ctx context.Context, key, blob string, held logline.Summary) error
}

// CountInto makes the sink tell c what its blobs hold. Call it before the
// first Flush or Landed.
func (s *Sink) CountInto(c Counter) { s.counter = c }

// countWriters tells the counter what each of a flush's blobs holds now,
// and keeps the blobs it could not tell for the key's next flush.
func (s *Sink) countWriters(ctx context.Context, key string, ws []*writer) error {
	if s.counter == nil {
		return nil
	}
	var errs []error
	for _, w := range ws {
		if err := s.count(ctx, key, w); err != nil {
			errs = append(errs, err)
			s.mu.Lock()
			if !slices.Contains(s.uncounted[key], w) {
				s.uncounted[key] = append(s.uncounted[key], w)
			}
			s.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// countPending tells the counter what it could not be told at the key's
// last flush.
func (s *Sink) countPending(ctx context.Context, key string) error {
	s.mu.Lock()
	ws := s.uncounted[key]
	delete(s.uncounted, key)
	s.mu.Unlock()
	if len(ws) == 0 {
		return nil
	}
	return s.countWriters(ctx, key, ws)
}

// count tells the counter what w's blob holds, unless it was told so.
func (s *Sink) count(ctx context.Context, key string, w *writer) error {
	if w.meta.Count == w.counted {
		return nil
	}
	if err := s.counter.Count(ctx, key, w.name, logline.Summary(w.meta)); err != nil {
		s.met.errors.WithLabelValues("count").Inc()
		return fmt.Errorf("cannot count the events of blob %s: %w", w.name, err)
	}
	w.counted = w.meta.Count
	return nil
}
