package buffer

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"ingest/internal/httperr"
	"ingest/wal"
)

// walRetryAfter is what a client refused because of the WAL is asked to
// wait: a disk to be freed or storage to catch up takes seconds, not ms.
const walRetryAfter = 5 * time.Second

// ErrWALFull is wrapped by the 503 refusal Add returns while the WAL on
// disk has reached --wal-max-bytes.
var ErrWALFull = errors.New("the write-ahead log is at --wal-max-bytes")

// walRoom refuses a batch, before anything is written, while the WAL has
// reached --wal-max-bytes: storage is not keeping up, and the disk must not
// fill without bound. Flush intents and done records are never refused
// (they are how the WAL shrinks).
func (b *Buffer) walRoom() error {
	if b.wal == nil {
		return nil
	}
	if n := b.wal.Bytes(); n >= b.cfg.WALMaxBytes {
		b.met.walRefused.WithLabelValues("max_bytes").Inc()
		return &httperr.Error{Status: http.StatusServiceUnavailable, RetryAfter: walRetryAfter, Err: ErrWALFull,
			Msg: fmt.Sprintf("cannot accept the batch: the write-ahead log holds %d bytes not yet in storage, the --wal-max-bytes limit (%d): storage is not keeping up; retry later, or raise --wal-max-bytes", n, b.cfg.WALMaxBytes)}
	}
	return nil
}

// walFailed turns a failed WAL append into the answer: a disk failure is a
// 503 that names its cause (no space left on device, read-only file
// system, input/output error); nothing of the batch was kept.
func (b *Buffer) walFailed(err error) error {
	if !errors.Is(err, wal.ErrDisk) {
		return err
	}
	b.met.walRefused.WithLabelValues("disk").Inc()
	b.walFail.Store(&walFailure{at: time.Now(), err: err})
	return &httperr.Error{Status: http.StatusServiceUnavailable, RetryAfter: walRetryAfter, Err: err,
		Msg: "cannot accept the batch: " + err.Error() + "; nothing of it was kept, retry later (writes resume by themselves once the disk of --data-dir recovers)"}
}

// walFailure is a batch refused because the WAL's disk failed.
type walFailure struct {
	at  time.Time
	err error
}

// walFailHold is how long a batch refused by the WAL's disk keeps the
// instance not ready: small records (flush intents) may get through a
// nearly full disk that still refuses batches.
const walFailHold = 2 * time.Second

// WALErr reports, for readiness, why the write-ahead log cannot take
// batches now: its disk failed the last write or refused a batch in the
// last two seconds, or it is at --wal-max-bytes. nil when it can (and
// with --ack memory).
func (b *Buffer) WALErr() error {
	if b.wal == nil {
		return nil
	}
	if err := b.wal.Err(); err != nil {
		return err
	}
	if f := b.walFail.Load(); f != nil && time.Since(f.at) < walFailHold {
		return f.err
	}
	if n := b.wal.Bytes(); n >= b.cfg.WALMaxBytes {
		return fmt.Errorf("%w: it holds %d bytes not yet in storage", ErrWALFull, n)
	}
	return nil
}
