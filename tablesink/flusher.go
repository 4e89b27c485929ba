package tablesink

import (
	"context"

	"ingest/buffer"
)

// The sink is the buffer's flusher of the login stream.
var _ buffer.Flusher = (*Sink)(nil)

// Flush stores data, whole records of the day table key in pieces, for
// the buffer (buffer.Flusher): piece by piece, each ending at a record's
// end, and returns the bytes of the pieces written when one fails. Its
// upserts are idempotent, so it journals nothing: after a crash the buffer
// replays the records and Flush simply writes them again.
func (s *Sink) Flush(ctx context.Context, r buffer.FlushRequest) (int, error) {
	key, data := r.Key, r.Data
	stored := 0
	for _, part := range data {
		if err := s.Write(ctx, key, part); err != nil {
			return stored, err
		}
		stored += len(part)
	}
	return stored, nil
}

// Landed is always 0: Flush journals no intent, so a flush a crash
// interrupted is written again whole.
func (s *Sink) Landed(context.Context, string, []byte) (int, error) { return 0, nil }
