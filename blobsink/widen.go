package blobsink

import (
	"context"
	"errors"
	"fmt"
)

// widenMeta sends the blob's metadata as it will be once the blocks about
// to be appended to it have landed, before they are: a query that lists
// the blob between the append and the end of the flush must not skip them.
// When they all land, that is already the final metadata and finishMeta has
// nothing to send: one metadata write per flush. When one fails, the
// metadata counts events that are not there until the key's next flush (or
// recovery, after a crash) sends what did land.
func (s *Sink) widenMeta(ctx context.Context, w *writer, planned []intentChunk, blob int, chunks []chunk) error {
	ahead := w.meta
	for j, ic := range planned {
		if ic.Blob != blob {
			break
		}
		ahead = ahead.Merge(chunks[j].meta)
	}
	if ahead == w.meta && w.metaSent {
		return nil
	}
	if err := s.store.SetMetadata(ctx, w.name, ahead.Map()); err != nil {
		s.met.errors.WithLabelValues("metadata").Inc()
		if errors.Is(err, ErrNotFound) {
			s.abandon(w, "the blob vanished")
			return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
		}
		return fmt.Errorf("cannot widen the metadata of blob %s before appending: %w", w.name, err)
	}
	s.met.metaWrites.Inc()
	w.ahead, w.aheadSet = ahead, true
	w.metaSent = ahead == w.meta
	return nil
}

// finishMeta makes the blob's metadata what landed, after the flush's
// blocks: nothing to send when widenMeta already sent exactly that. A
// failure is only logged: the next flush or recovery sends it.
func (s *Sink) finishMeta(ctx context.Context, w *writer) {
	if w.aheadSet && w.ahead == w.meta {
		w.metaSent, w.aheadSet = true, false
		return
	}
	if err := s.publish(ctx, w); err != nil {
		s.log.Warn("cannot update blob metadata, will retry on the next flush", "blob", w.name, "err", err)
		s.met.errors.WithLabelValues("metadata").Inc()
	}
}

// publish sends the metadata of what landed in the writer's blob.
func (s *Sink) publish(ctx context.Context, w *writer) error {
	if err := s.store.SetMetadata(ctx, w.name, w.meta.Map()); err != nil {
		return err
	}
	s.met.metaWrites.Inc()
	w.metaSent, w.aheadSet = true, false
	return nil
}
