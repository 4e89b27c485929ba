// Package httpapi is the HTTP face of ingest (fasthttp): it takes log events
// and login attempts, hands them to the buffer, and serves queries, health
// and metrics.
//
//	POST /v1/logs, /v1/logs/{service}   log events (NDJSON, JSON array, text, OTLP)
//	POST /v1/logins                      login attempts
//	GET  /v1/logs?service=S&from=T&to=T  query by blob prefix, NDJSON, streamed
//	GET  /v1/logins/{user}               a user's latest attempts, newest first
//	GET  /healthz, /readyz, /metrics
//
// A request's body is read through a byte budget for bodies in flight
// (--max-inflight-bytes, an admission.Budget), reserved as its bytes arrive
// rather than for what Content-Length declares, decompressed under --max-decompressed-bytes,
// parsed line by line (a bad line is reported with its number and skipped),
// encoded straight into the batch's per-key line buffers, and added to the
// buffer, which answers when the batch is as safe as --ack says. Errors
// are *httperr.Error values carrying their HTTP status (and Retry-After) to
// one place, writeError; any other error is a 500.
package httpapi
