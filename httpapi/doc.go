// Package httpapi is the HTTP face of ingest (fasthttp): it takes log events
// and login attempts, hands them to the buffer, and serves queries, health
// and metrics.
//
// The route table (routes.go) is tried in order:
//
//	GET  /healthz, /readyz, /metrics     open (/metrics behind a token with --metrics-auth)
//	GET  /, /ui/...                      the query page (package web)
//	GET  /debug/pprof/...                with --pprof, behind a token
//	POST /v1/logs, /v1/logs/{service}    log events (NDJSON, JSON array, text, OTLP)
//	POST /v1/logins                      login attempts
//	GET  /v1/logs?service=S&from=T&to=T  query by blob prefix, NDJSON, streamed
//	GET  /v1/logins/{user}               a user's latest attempts, newest first
//	GET  /v1/tail, /v1/services          live tail, the services stored
//	GET  /v1/stats/{service}             events per hour and level
//	POST /v1/retention                   delete the day tables past the retention
//	POST /v1/es/_bulk, /v1/es/{index}/_bulk  Elasticsearch bulk (package intake/es); other /v1/es/ calls answered as done
//	POST /loki/api/v1/push               Loki push, protobuf or JSON (package intake/loki), behind a token
//	GET  /ready                          as /readyz (Loki's readiness path)
//
// Every /v1/ path needs a token when --tokens is set, known or not. A token
// comes as Authorization: Bearer, ApiKey (Elasticsearch clients) or as the
// password of Basic auth.
//
// A request's body is read through a byte budget for bodies in flight
// (--max-inflight-bytes, an admission.Budget), reserved as its bytes arrive
// rather than for what Content-Length declares, decompressed under --max-decompressed-bytes,
// parsed line by line (a bad line is reported with its number and skipped),
// encoded straight into the batch's per-key line buffers (a log group also
// tallies its events per level, for the stats counters that observe the
// buffer's logs stream), and added to the buffer, which answers when the
// batch is as safe as --ack says. Errors are *httperr.Error values carrying
// their HTTP status (and Retry-After) to one place, writeError; any other
// error is a 500.
//
// The server takes what it serves from as small interfaces of its own
// (Deps: Buffer, Logins, Stats, query.Store), which *buffer.Buffer,
// *tablesink.Sink, *tablesink.Counters and the blob stores satisfy.
package httpapi
