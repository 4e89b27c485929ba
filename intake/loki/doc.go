// Package loki decodes the body of a Loki push request (POST
// /loki/api/v1/push) into log events. It knows nothing of HTTP servers or
// storage: a handler hands it the body and its format and gets events
// through a callback.
//
//	f, err := loki.DetectFormat(contentType)
//	if f == loki.FormatProtobuf {
//		body, err = intake.Decompress(buf[:0], body, "snappy", maxDecoded) // always snappy (block format)
//	}
//	var d loki.Decoder // reusable; not safe for concurrent use
//	res, err := d.Decode(body, f, cfg.Labels(), now, func(e *logline.Event) error {
//		return group.Add(e) // copy out: e and its bytes are reused
//	})
//	// 204 when res.Rejected == 0, else 400 naming the rejected entries
//
// Two bodies, the same content: a PushRequest in protobuf (what Promtail,
// Grafana Alloy and Vector send; decoded here by hand from Loki's
// documented schema: PushRequest.streams = 1; StreamAdapter.labels = 1,
// entries = 2; EntryAdapter.timestamp = 1 (google.protobuf.Timestamp),
// line = 2, structuredMetadata = 3; LabelPairAdapter.name = 1, value = 2;
// unknown fields skipped), or JSON (what Fluent Bit sends):
//
//	{"streams":[{"stream":{"job":"api","level":"info"},
//	  "values":[["1763740800000000000","a line"],["1763740800000000001","another",{"trace_id":"abc"}]]}]}
//
// Mapping: every entry is one event, its line the message, its timestamp
// the time (without one, the arrival time). A stream's labels are a
// Prometheus label set, {job="api", level="info"} in protobuf. The
// service is the first of Config.ServiceLabels the stream has (default
// service_name, service, app, job; else "default"), the level its level,
// else detected_level, label, the host its host, else hostname, label;
// those labels are consumed, a level of unknown spelling stays an
// attribute. Every other label and the entry's structured metadata are
// attributes (strings). Ids are generated. The tenant (X-Scope-OrgID) is
// not the decoder's concern: ingest is one tenant, and a token's service
// prefixes say what a shipper may write.
//
// A bad entry (its timestamp out of range, in JSON a value that is not
// [ts, line] or [ts, line, {metadata}]) is rejected and counted with its
// 1-based number across the request, and so is every entry of a stream
// whose labels cannot be read; the others go on. A body that is broken as
// a whole is an error (a *httperr.Error, 400); events emitted before it was
// found belong to a failed request and are to be dropped.
//
// Performance: a Decoder holds its scratch space from one request to the
// next; after warm-up decoding allocates nothing per entry, and a stream's
// labels are read once for all its entries. Lines and metadata without
// escapes are handed out as sub-slices of the body.
package loki
