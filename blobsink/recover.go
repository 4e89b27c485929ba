package blobsink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"ingest/internal/disk"
	"ingest/logline"
)

// rangeReader is implemented by stores that read part of a blob cheaply.
type rangeReader interface {
	ReadRange(ctx context.Context, name string, offset int64, n int) ([]byte, error)
}

// readRange returns n bytes of the blob from offset (io.ErrUnexpectedEOF
// when it is shorter).
func readRange(ctx context.Context, store Store, name string, offset int64, n int) ([]byte, error) {
	if r, ok := store.(rangeReader); ok {
		return r.ReadRange(ctx, name, offset, n)
	}
	rc, err := store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// truncater is implemented by stores that can cut a blob back (FileStore).
type truncater interface {
	Truncate(ctx context.Context, name string, size int64) error
}

// Landed implements the buffer's Flusher: for a flush interrupted by a
// crash, it finds which of the planned blocks are in storage, brings the
// metadata of their blobs up to date, tells the Counter what they hold and
// returns the bytes they carry.
func (s *Sink) Landed(ctx context.Context, key string, body []byte) (int, error) {
	var in intent
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, fmt.Errorf("cannot read a flush intent of %s: %w", key, err)
	}
	landed := 0
	stop := false
	for bi, b := range in.Blobs {
		info, err := s.store.Stat(ctx, b.Name)
		if errors.Is(err, ErrNotFound) {
			break // claimed blobs are created before the intent; a missing one got nothing
		}
		if err != nil {
			return 0, fmt.Errorf("cannot read blob %s to resolve an unfinished flush: %w", b.Name, err)
		}
		meta := b.Base
		planned := false     // widenMeta may have sent metadata counting blocks that did not land
		end := int64(-1)     // end of the last block that landed whole
		missing := int64(-1) // end of the first planned block that did not
		for _, c := range in.Chunks {
			if c.Blob != bi || stop {
				continue
			}
			planned = true
			ok := c.Offset+int64(c.Stored) <= info.Size
			if ok && c.Sum != 0 {
				// The blob is long enough; its bytes say whether they are ours.
				got, err := readRange(ctx, s.store, b.Name, c.Offset, c.Stored)
				if err != nil {
					return 0, fmt.Errorf("cannot read blob %s back to resolve an unfinished flush: %w", b.Name, err)
				}
				ok = crc32.Checksum(got, disk.Castagnoli) == c.Sum
			}
			if !ok {
				stop = true
				if end < 0 {
					end = c.Offset
				}
				missing = c.Offset + int64(c.Stored)
				continue
			}
			landed += c.Raw
			meta = meta.Merge(c.Meta)
			end = c.Offset + int64(c.Stored)
		}
		if end >= 0 && info.Size > end && info.Size < missing {
			// Part of our next block: torn by power loss, which only a
			// FileStore can see. Another writer's whole bytes stay.
			if t, ok := s.store.(truncater); ok {
				if err := t.Truncate(ctx, b.Name, end); err != nil {
					return 0, err
				}
			}
		}
		if meta.Count > 0 || planned {
			if err := s.store.SetMetadata(ctx, b.Name, meta.Map()); err != nil {
				return 0, fmt.Errorf("cannot update metadata of blob %s: %w", b.Name, err)
			}
		}
		if meta.Count > 0 && s.counter != nil {
			if err := s.counter.Count(ctx, key, b.Name, logline.Summary(meta)); err != nil {
				return 0, fmt.Errorf("cannot count the events of blob %s: %w", b.Name, err)
			}
		}
		if stop {
			break
		}
	}
	return landed, nil
}
