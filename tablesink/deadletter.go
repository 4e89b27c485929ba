package tablesink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"ingest/blobsink"
	"ingest/internal/retry"
	"ingest/logline"
)

// DeadLetterPrefix starts the names of the dead-letter blobs:
// _deadletter/logins/YYYY/MM/DD/hh00/NNNNNN.log, by the hour they were
// written.
const DeadLetterPrefix = "_deadletter/logins"

// BlobStore is what the dead letters need from a blob service: create an
// append blob only if its name is free, and append to it. blobsink.Store
// implements it.
type BlobStore interface {
	Create(ctx context.Context, name string, meta map[string]string) error
	Append(ctx context.Context, name string, offset int64, block ...[]byte) error
}

// deadLetter is one record the table cannot take.
type deadLetter struct {
	reason string // metric label: rejected or bad_record
	err    error
	record []byte // the entity as JSON, or the record line that could not be parsed
}

// deadLetters writes refused records to new blobs under DeadLetterPrefix.
type deadLetters struct {
	store BlobStore
	mu    sync.Mutex
	hour  string // the hour prefix next names the last blob claimed in
	next  int
}

// SetDeadLetters makes the sink write what the table service refuses (and
// records that cannot be made into entities) to dead-letter blobs in store,
// one line each: {"ts", "table", "reason", "error", "record"}. Without it
// such records are logged, counted as dropped and skipped.
func (s *Sink) SetDeadLetters(store BlobStore) { s.dead.store = store }

// deadLetter writes dls to a new dead-letter blob: a blob is claimed with
// a conditional create (the next free number of the hour), filled with one
// append, and never appended to again, so instances never share one. An
// error leaves the flush failed, to be retried: a dead letter is written at
// least once.
func (s *Sink) deadLetter(ctx context.Context, table string, dls []deadLetter) error {
	if len(dls) == 0 {
		return nil
	}
	if s.dead.store == nil {
		for _, d := range dls {
			s.m.dropped.WithLabelValues(d.reason).Inc()
		}
		s.log.Error("dropping login records the table cannot take (no dead-letter store)", "table", table, "records", len(dls), "err", dls[0].err)
		return nil
	}
	now := s.now()
	var block []byte
	for _, d := range dls {
		block = append(block, `{"ts":"`...)
		block = logline.AppendTime(block, now.UnixNano())
		block = append(block, `","table":`...)
		block = logline.AppendQuoted(block, []byte(table))
		block = append(block, `,"reason":`...)
		block = logline.AppendQuoted(block, []byte(d.reason))
		block = append(block, `,"error":`...)
		block = logline.AppendQuoted(block, []byte(d.err.Error()))
		block = append(block, `,"record":`...)
		block = logline.AppendQuoted(block, d.record)
		block = append(block, "}\n"...)
	}
	name, err := s.claimDeadLetterBlob(ctx, now)
	if err == nil {
		err = s.retryBlob(ctx, func() error {
			err := s.dead.store.Append(ctx, name, 0, block)
			if errors.Is(err, blobsink.ErrAppendPosition) {
				return nil // an earlier try landed
			}
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("cannot write %d login records to the dead-letter blobs: %w", len(dls), err)
	}
	for _, d := range dls {
		s.m.deadLetters.WithLabelValues(d.reason).Inc()
	}
	s.log.Warn("login records written to a dead-letter blob", "table", table, "blob", name, "records", len(dls))
	return nil
}

// claimDeadLetterBlob creates the next free dead-letter blob of now's hour.
func (s *Sink) claimDeadLetterBlob(ctx context.Context, now time.Time) (string, error) {
	hour := DeadLetterPrefix + now.UTC().Format("/2006/01/02/1500")
	d := &s.dead
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hour != hour {
		d.hour, d.next = hour, 1
	}
	for {
		name := blobsink.BlobName(hour, d.next, blobsink.CompressNone)
		err := s.retryBlob(ctx, func() error { return d.store.Create(ctx, name, nil) })
		d.next++
		switch {
		case err == nil:
			return name, nil
		case !errors.Is(err, blobsink.ErrExists):
			return "", err
		}
	}
}

// retryBlob runs a blob operation through the write retry policy: the
// blob store's errors other than its sentinels are transient.
func (s *Sink) retryBlob(ctx context.Context, op func() error) error {
	p := s.writeRetry
	p.Op = "write_login_dead_letter"
	return p.Do(ctx, func(context.Context) error {
		if err := op(); errors.Is(err, blobsink.ErrExists) {
			return retry.Permanent(err)
		} else {
			return err
		}
	})
}
