// Package httpapi is the HTTP face of ingest (fasthttp): it takes log events
// and login attempts, hands them to the buffer, and serves queries, health
// and metrics.
//
// The route table (routes.go) is tried in order:
//
//	GET  /healthz, /readyz, /metrics     open (/metrics behind a token with --metrics-auth)
//	GET  /, /ui/...                      the query page (package web)
//	GET  /debug/pprof/...                with --pprof: an unscoped token, or a loopback client without tokens
//	POST /v1/logs, /v1/logs/{service}    log events (NDJSON, JSON array, text, OTLP)
//	POST /v1/logins                      login attempts
//	GET  /v1/logs?service=S&from=T&to=T  query by blob prefix, NDJSON, streamed
//	GET  /v1/logins/{user}               a user's latest attempts, newest first
//	GET  /v1/tail, /v1/services          live tail (every instance's), the services stored
//	GET  /v1/cluster                     the live instances sharing the storage
//	GET  /v1/stats/{service}             events per hour and level
//	POST /v1/retention                   delete the day tables past the retention
//	GET  /loki/api/v1/...                Loki's read API for Grafana (loki_*.go), tail a WebSocket
//	POST /v1/es/_bulk, /v1/es/{index}/_bulk  Elasticsearch bulk (package intake/es); other /v1/es/ calls answered as done
//	POST /loki/api/v1/push               Loki push, protobuf or JSON (package intake/loki)
//	GET  /ready                          as /readyz (Loki's readiness path)
//
// Every /v1/ and /loki/ path needs a token when --tokens is set, known or not; an
// instance's own tail (/v1/tail?local=1) also takes its tail key, which the
// other instances of the cluster read from the cluster table (tailpeers.go).
// Before any route, guard.go refuses a Host that names another site when
// no tokens are set (DNS rebinding; the probes excepted) and a write a
// browser sent from another origin (cross-site forms).
// A token comes as Authorization: Bearer, ApiKey (Elasticsearch clients)
// or as the password of Basic auth.
//
// A request's body is read through a byte budget for requests in flight
// (--max-inflight-bytes, held by an admission.Hold per request), reserved
// as its bytes arrive rather than for what Content-Length declares,
// decompressed under --max-decompressed-bytes with each step of the
// decoded body reserved before it is allocated, and decoded by package
// intake, which hands every row to a group.Grouper: the one place rows
// become the buffer's batch (grouped per service and hour, or per day
// table), under the per-request limits, with the encoded lines reserved
// as they grow. A request that can never fit the budget is a 413, one that
// does not fit now a 429. The handler then adds the batch to the buffer,
// which answers when it is as safe as --ack says. Errors are
// *httperr.Error values carrying their HTTP status (and Retry-After) to
// one place, writeError; any other error is a 500. A refusal that leaves a
// body unread (413 over --max-body-bytes, 503 while shutting down) closes
// the connection after a bounded linger, so the rest of the body is never
// read as a request.
//
// No request ends the process: a panic in a handler answers 500, one in a
// streamed answer's writer (or a reader's goroutine) ends the answer with
// an in-band error line, each counted and logged once per place and minute
// (panics.go). Reads that scan storage run at most --max-concurrent-queries
// at once (querygate.go), and every range, interval and count they take is
// checked before it is used (a 400 naming the limit). Streamed answers keep
// data and control apart: control lines carry the reserved key
// query.ControlKey, which no event has.
//
// The server takes what it serves from as small interfaces of its own
// (Deps: Buffer, Logins, Stats, Cluster, query.Store), which *buffer.Buffer,
// *tablesink.Sink, *stats.Table, *cluster.Membership and the blob stores
// satisfy.
package httpapi
