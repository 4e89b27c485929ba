package blobsink

import (
	"context"
	"errors"
	"fmt"
)

// claim creates the first free blob numbered seq or above.
func (s *Sink) claim(ctx context.Context, key string, seq int) (*writer, error) {
	for tries := 0; tries < 1000; tries++ {
		name := BlobName(key, seq, s.cfg.Compression)
		err := s.store.Create(ctx, name, Meta{}.Map())
		if err == nil {
			s.met.created.Inc()
			return newWriter(name, seq), nil
		}
		if !errors.Is(err, ErrExists) {
			s.met.errors.WithLabelValues("create").Inc()
			return nil, fmt.Errorf("cannot create blob %s: %w", name, err)
		}
		s.met.claimConflicts.Inc()
		seq++
	}
	return nil, fmt.Errorf("cannot claim a blob number under %s: 1000 numbers in a row are taken", key)
}
