// Package intake turns HTTP request bodies into log events and login
// attempts. It knows nothing of HTTP servers or storage: a handler hands it
// the body and two headers and gets events back through a callback.
//
// The request path:
//
//	raw, err := intake.Decompress(buf[:0], body, contentEncoding, maxDecompressed, &hold)
//	f, err := intake.DetectFormat(contentType, raw, true)
//	p := intake.GetParser()
//	g := groups.Get(&hold) // a group.Grouper: rows -> the buffer's batch
//	res, err := p.ParseLogs(raw, f, intake.Defaults{Service: svc, Now: now}, g.AddEvent)
//	intake.PutParser(p)
//	// err: answer it; else 202 with res.AppendJSON(nil) and g.Batch() in
//	// the buffer, or 400 when res.Accepted == 0 && res.Rejected > 0
//
// A parser emits each row through a callback, func(*logline.Event) error
// (package group describes the contract): nil takes the row, an error that
// group.IsRejected rejects it alone, any other error ends parsing and is
// returned. The row is valid only during the call.
//
// Every error of its own is a *httperr.Error carrying the HTTP status to
// answer with: 413 for a body that decompresses past the limit, 415 for an
// unknown encoding or content type, 400 for a body that is broken as a
// whole. A bad line is not an error: it is counted, listed with its 1-based
// line number (at most MaxErrors listed) and skipped, and the rest of the
// batch goes on.
//
// Bodies: NDJSON, a JSON array of objects (Fluent Bit, Vector), plain text
// lines, and OTLP/HTTP logs in protobuf or JSON. JSON fields follow
// docs/contract.md: the time from ts, timestamp, time, @timestamp or date (RFC 3339 or
// Unix s/ms/µs/ns by magnitude), level or severity, service, host, id,
// message, msg or log; every other field lands in the event's attrs object
// in input order. Events without an id get a generated one (see ids.go).
//
// Performance: a Parser is pooled per-request state (a one-pass JSON scanner,
// scratch buffers, the event handed to emit), so after warm-up parsing
// NDJSON allocates nothing per event; emitted events point into the body
// and the scratch space and are valid only during the callback.
// Decompressors are pooled and reset, and read through a size limit, each
// step of their output reserved from the request's memory budget before
// it is allocated, so a bomb costs what the budget gives.
package intake
