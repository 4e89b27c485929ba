// Package deadletter keeps what a sink cannot store: each batch of lines
// goes to a new append blob, prefix/YYYY/MM/DD/hh00/NNNNNN.log by the hour
// it was written, claimed with a conditional create (the next free number
// of the hour) and filled with one append, never appended to again, so
// instances writing to the same container never share a blob.
//
// A Write costs at least two storage requests, more while numbers of the
// hour are taken; every request goes through the retry policy it is given.
package deadletter

import (
	"context"
	"errors"
	"sync"
	"time"

	"ingest/blobsink"
	"ingest/internal/retry"
)

// Store is what the dead letters need from a blob service: create an
// append blob only if its name is free, and append to it. blobsink.Store
// implements it.
type Store interface {
	Create(ctx context.Context, name string, meta map[string]string) error
	Append(ctx context.Context, name string, offset int64, block ...[]byte) error
}

// Writer writes batches of dead letters to new blobs under one prefix. It
// is safe for concurrent use.
type Writer struct {
	store  Store
	prefix string
	retry  retry.Policy // blob errors other than blobsink's sentinels are transient
	mu     sync.Mutex
	hour   string // the hour prefix next names the last blob claimed in
	next   int
}

// New returns a Writer of blobs under prefix (no trailing '/') in store,
// each request retried by p.
func New(store Store, prefix string, p retry.Policy) *Writer {
	return &Writer{store: store, prefix: prefix, retry: p}
}

// Write writes block, whole lines, to a new blob of now's hour and returns
// its name. An error leaves nothing to undo: the caller retries, and a
// dead letter is written at least once.
func (w *Writer) Write(ctx context.Context, now time.Time, block []byte) (name string, err error) {
	if name, err = w.claim(ctx, now); err != nil {
		return "", err
	}
	err = w.do(ctx, func() error {
		err := w.store.Append(ctx, name, 0, block)
		if errors.Is(err, blobsink.ErrAppendPosition) {
			return nil // an earlier try landed
		}
		return err
	})
	return name, err
}

// claim creates the next free blob of now's hour.
func (w *Writer) claim(ctx context.Context, now time.Time) (string, error) {
	hour := w.prefix + now.UTC().Format("/2006/01/02/1500")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hour != hour {
		w.hour, w.next = hour, 1
	}
	for {
		name := blobsink.BlobName(hour, w.next, blobsink.CompressNone)
		err := w.do(ctx, func() error { return w.store.Create(ctx, name, nil) })
		w.next++
		switch {
		case err == nil:
			return name, nil
		case !errors.Is(err, blobsink.ErrExists):
			return "", err
		}
	}
}

// do runs a blob operation under the retry policy; a name already taken
// is final.
func (w *Writer) do(ctx context.Context, op func() error) error {
	return w.retry.Do(ctx, func(context.Context) error {
		if err := op(); errors.Is(err, blobsink.ErrExists) {
			return retry.Permanent(err)
		} else {
			return err
		}
	})
}
