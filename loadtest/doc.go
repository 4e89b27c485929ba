// Package loadtest is ingest's load generator: it posts realistic log
// events and login attempts to an ingest server over the HTTP API, measures
// what comes back, and reports throughput, latency, errors, how the login
// keys would spread over table partitions, and (with Verify) whether every
// acknowledged event can be read back exactly once.
//
// # Traffic
//
// Log events come from a set of services and hosts with a realistic level
// mix (mostly info, some debug and warn, few error and fatal), messages
// whose sizes are lognormal around Config.EventSize (one-line access logs
// next to stack traces), a few attributes (user, latency_ms, status,
// method, path, trace_id) and timestamps either as RFC 3339 strings or Unix
// milliseconds, under the field names different shippers use. Login
// attempts go to POST /v1/logins with users drawn from a Zipf distribution;
// Config.AttackUser adds a credential-stuffing burst of mostly failed
// attempts against one user. Every event carries a unique id, the run's
// prefix plus a counter ("lt5k2m9q-m000000000042"), so a read-back can tell
// lost and duplicated events apart from everyone else's.
//
// # Several instances
//
// Config.Target may list several instances (comma separated): batch k goes
// to target k mod N, and, as a load balancer would, a batch answered 503
// (an instance shutting down) or whose connection is refused (an instance
// gone) goes to the next. The read-back goes through the first target,
// after every target still answering has stored what it took, so it checks
// that any instance reads every instance's events; Report.TargetOf tells
// which target took an event. The partition report models the instances
// (Config.Replicas, default one per target): each judges hot users on the
// attempts it received, with --hot-user-rate shared among them.
//
// # Scheduling and latency
//
// With Config.Rate > 0 the run is open loop: batch k is due at
// start + k*Batch/Rate whatever happened to earlier batches, and its
// latency is measured from that intended time, not from when a worker got
// round to sending it. A server stall therefore shows up in the
// percentiles as the queueing it causes instead of being hidden
// (coordinated omission). With Rate 0 the workers send back to back and
// latency is measured from the actual send. 429 and 503 answers are
// honoured: the worker waits Retry-After and resends the same batch, which
// is counted once.
//
// # Example
//
//	cfg := loadtest.DefaultConfig()
//	cfg.Target = "http://127.0.0.1:8080"
//	cfg.Rate = 200_000
//	cfg.Duration = 30 * time.Second
//	cfg.HTML = "load.html"
//	rep, err := loadtest.Run(ctx, cfg, os.Stderr)
//	if err != nil {
//		return err
//	}
//	rep.WriteText(os.Stdout)
//
// # Performance
//
// Request bodies are generated before the run as a pool of templates; a
// send copies one and patches the fixed-width id digits and timestamps in
// place, so generating costs a memcpy plus a few digit writes per event
// and allocates nothing (BenchmarkFill). Each worker owns a reusable
// fasthttp request, body buffer and, for gzip or zstd, one encoder. Per
// request the stats take one short mutex; the partition report and the
// verification bitsets are computed after the run from one small record
// per batch, off the sending path.
//
// Ceiling (BenchmarkRunLoopback: closed loop, 1,000-event batches, against
// an in-process fasthttp server that only answers 202, both on the same 2
// shared cores): about 3 to 4 million events/s (1.2 to 1.5 GB/s of NDJSON)
// uncompressed. With gzip or zstd each body is compressed per request and
// the encoder is the limit, about 0.45 million events/s on the same cores.
package loadtest
