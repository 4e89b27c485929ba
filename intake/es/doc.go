// Package es decodes the body of an Elasticsearch _bulk request into log
// events and writes the answer Elasticsearch clients expect. It knows
// nothing of HTTP servers or storage: a handler hands it the decoded body
// and gets events through a callback, then asks for the answer.
//
//	var d es.Decoder // reusable; not safe for concurrent use
//	err := d.Decode(body, es.Request{Index: pathIndex, Now: now, FilterPath: fp}, func(e *logline.Event) error {
//		return group.Add(e) // copy out: e and its bytes are reused
//	})
//	// once the events are stored: 200 with d.AppendAnswer(nil, took)
//
// The body is NDJSON: an action line, then (for create and index) one
// document line. create and index store the document as one event and are
// answered 201; delete and update (ingest stores logs append-only), any
// other action, an action line that cannot be read and a document that is
// not a JSON object get a 400 item with a reason, and the rest of the
// request goes on. A line that cannot be read as an action is taken to be
// followed by its document, which is skipped with it.
//
// Mapping of a document (keys nested as objects or written with dots are
// the same key: {"log":{"level":"warn"}} and {"log.level":"warn"} both
// set the level):
//
//   - @timestamp is the time (RFC 3339 or epoch milliseconds); without it
//     a top-level timestamp string is (Vector's bulk mode), else the
//     arrival time.
//   - message is the message; without it a top-level msg or log string is
//     (Fluent Bit's tail input writes log); without any, the message is
//     empty and the document is kept whole as attributes.
//   - service.name, else a service string, is the service; else the
//     action's _index, else the path's index, else "default".
//   - log.level, else level, is the level (an unknown spelling stays an
//     attribute); host.name, else a host string, is the host.
//   - The action's _id is the event id; without one an id is generated.
//   - Every other key is an attribute. Nested objects are flattened to
//     dotted keys ({"http":{"request":{"method":"GET"}}} becomes
//     "http.request.method":"GET"), so a query names a field the same way
//     whichever way a shipper wrote it; arrays and empty objects are kept
//     as JSON values.
//
// Performance: a Decoder holds its scratch space (the document's JSON
// index, attributes, the answer's items) from one request to the next, so
// after warm-up decoding allocates nothing per event; strings without
// escapes are handed out as sub-slices of the body. The answer costs
// about 60 bytes per action with Filebeat's and Logstash's filter_path,
// about 130 without.
package es
