package blobsink

import (
	"context"
	"errors"
	"fmt"
	"ingest/logline"
)

// widenMeta makes the blob's StartTime, EndTime and LogType cover the
// blocks about to be appended to it, before they are: a query that lists the
// blob between the append and the final metadata update must not skip it.
// (EventCount is only raised once the blocks are in.)
func (s *Sink) widenMeta(ctx context.Context, w *writer, planned []intentChunk, blob int, chunks []chunk) error {
	wide := w.meta
	have := w.meta.Count > 0
	for j, ic := range planned {
		if ic.Blob != blob {
			break
		}
		m := chunks[j].meta
		if m.Count == 0 {
			continue
		}
		if !have {
			wide.Start, wide.End, have = m.Start, m.End, true
		}
		wide.Start = min(wide.Start, m.Start)
		wide.End = max(wide.End, m.End)
		wide.Levels |= m.Levels
	}
	if wide == w.meta && w.metaSent {
		return nil
	}
	md := wide.Map()
	md[MetaStartTime] = string(logline.AppendTime(nil, wide.Start))
	md[MetaEndTime] = string(logline.AppendTime(nil, wide.End))
	if err := s.store.SetMetadata(ctx, w.name, md); err != nil {
		s.met.errors.WithLabelValues("metadata").Inc()
		if errors.Is(err, ErrNotFound) {
			s.abandon(w, "the blob vanished")
			return fmt.Errorf("cannot append to blob %s: it vanished; the next flush claims a new blob", w.name)
		}
		return fmt.Errorf("cannot widen the metadata of blob %s before appending: %w", w.name, err)
	}
	return nil
}

// finishMeta sends the blob's metadata as it stands after the flush's
// blocks. A failure is only logged: the next flush or recovery sends it.
func (s *Sink) finishMeta(ctx context.Context, w *writer) {
	if err := s.store.SetMetadata(ctx, w.name, w.meta.Map()); err != nil {
		s.log.Warn("cannot update blob metadata, will retry on the next flush", "blob", w.name, "err", err)
		s.met.errors.WithLabelValues("metadata").Inc()
		return
	}
	w.metaSent = true
}
