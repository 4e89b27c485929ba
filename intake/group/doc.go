// Package group is the one place where a request's decoded rows become the
// buffer's batch: log events grouped per (service, UTC hour) key, login
// attempts per day table. It enforces the limits of a request
// (--max-events-per-request, --max-service-hours-per-request) and of the
// instance (--max-new-services-per-hour), and reserves the memory of what
// it encodes from the request's share of --max-inflight-bytes before it
// allocates it. Every protocol's handler uses it the same way: decode,
// hand each row to a Grouper, add its batch to the buffer, answer.
//
// # The interface decoders emit through
//
// A decoder emits rows through a callback, func(*logline.Event) error
// (func(*login.Attempt) error for login attempts); Grouper.AddEvent and
// Grouper.AddLogin are such callbacks. The row, and everything it points
// to, is valid only during the call: the Grouper copies what it keeps.
// A nil error means the row is in the batch. A non-nil error that
// IsRejected (a *Rejected: a cap on services, a login the sink refuses)
// refuses that row alone: the decoder reports it against the row's line or
// item number with the error's text, and goes on. Any other error (too
// many events, the memory budget refused) ends decoding: the decoder
// returns it, and the handler answers it (an *httperr.Error carries its
// status). A decoder that treats every error as the end is still correct,
// only coarser: the request is refused instead of one row.
//
//	g := pool.Get(&hold) // hold: the request's *admission.Hold
//	defer pool.Put(g)
//	for n, row := range rows {
//		decodeInto(&ev, row) // the decoder's own reusable event
//		if err := g.AddEvent(&ev); group.IsRejected(err) {
//			reject(n, err.Error()) // that row only
//		} else if err != nil {
//			return err // the whole request: 413, 429...
//		}
//	}
//	err := buf.Add(ctx, g.Batch())
//
// # Limits
//
// Past --max-events-per-request the request is refused whole (413): a
// decoder stops at once instead of parsing millions of rows. The Grouper
// counts the rows it is given; a decoder that rejects rows itself counts
// them against the same cap (Pool.MaxEvents, TooManyEvents), as intake's
// do through Defaults.MaxRows. A request may
// write at most --max-service-hours-per-request (service, hour) keys, each
// a blob with its directories and flushes; an instance takes on at most
// --max-new-services-per-hour services it has not seen in the current or
// the previous hour. Past either, the events of a further key or service
// are rejected one by one: they are not the fault of the request's other
// events, which are kept, and a shipper told "rejected" for a few rows
// neither drops nor retries the whole batch for them.
//
// # Memory
//
// A group's lines are reserved from the request's admission.Hold before
// they are written (admission.Grow): within the capacity a pooled Grouper
// already has, a step at a time; past it, the new capacity before it is
// allocated. A refusal ends the request. A line's room is taken from a
// bound computed from the event (tokens at their caps, the message at six
// bytes a byte), so no append allocates behind the budget's back. A new
// group also reserves its key and bookkeeping. A pooled Grouper keeps at
// most 4 MiB of line buffers, the only memory no request has reserved.
//
// # Performance
//
// An event costs its line's encoding and, mostly, no lookup: its group is
// found by its service as sent and its hour in a small table indexed by a
// few of the name's bytes, and the key is encoded only for a new (service,
// hour); past 64 of them, a map by key. After warm-up, AddEvent allocates
// nothing per event; AddLogin encodes an attempt once, into its day's
// group, by the sink's AppendRecord.
package group
