package buffer

import (
	"net/http"
	"time"

	"ingest/internal/httperr"
)

// failingRetryAfter is what a refusal for failing storage asks the client
// to wait: about a few flush retries.
const failingRetryAfter = 5 * time.Second

// refuseIfStorageDown returns a 503 naming the cause while StorageDown:
// with --ack flush a batch would only wait for --ack-timeout, so it is
// refused before anything of it is written.
func (b *Buffer) refuseIfStorageDown() error {
	if !b.StorageDown() {
		return nil
	}
	cause := "flushes keep failing"
	if p := b.lastFlushErr.Load(); p != nil {
		cause = (*p).Error()
	}
	b.met.refusedFailing.Inc()
	return &httperr.Error{
		Status:     http.StatusServiceUnavailable,
		Msg:        "cannot store the batch now: storage is failing (" + cause + "); nothing was written, retry later",
		RetryAfter: failingRetryAfter,
	}
}
