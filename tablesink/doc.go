// Package tablesink keeps login attempts in one Azure table per UTC day, on
// the Azure Table service or an embedded bbolt file with the same names,
// keys and queries; its Store is the table service the stats package uses
// too.
//
// # Day tables
//
// An attempt at time T goes to table logins{YYYYMMDD} of T's UTC day
// (logins20261121). Sink.Maintain, run at start-up and hourly by Sink.Run,
// creates today's and tomorrow's tables ahead of time (Azure throttles a
// brand-new table while it learns its load) and deletes each table older than
// --login-retention-days (60) with one DeleteTable: the high-volume delete
// pattern, never entity by entity. Azure refuses a deleted table's name for
// a while (about 40 s), so names are never reused: days only move forward,
// and the sink never creates a table for a day past the retention (attempts
// that old are refused by AppendRecord, dropped and counted by Flush).
//
// # Keys
//
// Package shard builds them: PartitionKey = a 4-hex hash bucket of the user
// (of user and salt for a user hot enough to be salted); RowKey = escaped
// user "~" 19-digit inverted .NET ticks "_" escaped id. For example, user
// alice@example.com, id 01JDQ8 at 2026-11-21T18:04:05.1234567Z is entity
// 001e / alice@example.com~8584063226403541240_01JDQ8 of logins20261121
// with properties User, Time (Edm.DateTime), Success, IP, UA, ID, and Props
// (the client's other fields as one JSON string: Azure property names must
// be identifiers and at most 252 per entity, which arbitrary fields are
// not). Two more kinds of rows: the salted marker of a user who was salted
// (in the user's unsalted bucket, first in the user's range, holding the
// salt count) and the table's scheme marker (partition "scheme", row "v2").
//
// A day table created by this version holds the scheme marker. A table
// without it was created by the first version (one partition per user,
// shard's Legacy* keys) and, for the day of an upgrade, may hold both kinds:
// Tail reads it under both schemes until it ages out, so nothing written
// before an upgrade is lost to reads. Records of the first version replayed
// from the write-ahead log after an upgrade are re-keyed at flush.
//
// # Write path
//
// AppendRecord runs at intake: it decides the keys (the hot-user salting
// uses the intake clock), checks Azure's limits, and appends one compact
// JSON record line for the buffer, keyed by day table. Flush (the sink is
// the login stream's buffer.Flusher) hands one table's records (a chunk of
// the stream's FlushBytes) to Write, which groups them by bucket across the
// whole chunk into entity group transactions (at most 100 entities and
// 4 MiB, one partition each, a RowKey at most once), and upserts them,
// --login-flush-parallel at a time, so a replayed or retried flush
// duplicates nothing. Each entity's JSON is made once, when Write builds
// and checks it (its strings and JSON in blocks shared by the flush): the
// transactions are sized, checked and sent with it. Retries go through the shared retry policy
// (internal/retry): throttling (503 ServerBusy, 429) backs off
// exponentially with jitter, up to 10 s a wait and about a minute per
// transaction, other transient errors (500, timeouts, resets) up to
// --login-flush-retries tries; a missing table is created and the write retried. A transaction
// the service rejects as invalid (400) is retried entity by entity, and an
// entity it refuses on its own, like a record that cannot be made into an
// entity, goes to a dead-letter blob
// (_deadletter/logins/YYYY/MM/DD/hh00/NNNNNN.log, one JSON line per record
// with the reason) and is counted; the flush moves on. Flush returns nil
// only when everything is committed or dead-lettered.
//
//	s, _ := tablesink.New(cfg, tablesink.NewAzureStore(svc), reg, log)
//	s.SetDeadLetters(blobStore)
//	key, rec, err := s.AppendRecord(rec[:0], &attempt) // at intake
//	err = s.Write(ctx, key, records)                    // from the buffer
//	latest, err := s.Tail(ctx, "alice@example.com", 7, 50)
//
// # Read path
//
// Tail reads the newest attempts of a user: in each day table from the
// newest, one $top=limit range query (the user's RowKey range) in the
// user's unsalted bucket; if the salted marker comes first, the same range
// in each salted bucket too, in parallel, merged newest first; it stops
// once the limit is reached.
//
// # Limits enforced here
//
// Azurite accepts transactions over two partitions, over 100 entities
// (returning an unparseable response), entities over 1 MiB and more than
// 252 properties; Azure does not. checkBatch and checkEntity enforce Azure's
// limits in both Stores before anything is sent.
//
// # Performance
//
// With 256 buckets a flush of 25,000 attempts from 10,000 users takes 365
// transactions, the fewest possible (TestFlushFillsTransactions): 14.6 write
// requests per 1,000 attempts (ingest_login_write_requests_total /
// ingest_login_entities_written_total), against nearly one per attempt when
// the partition was the user. Fewer attempts per flush mean emptier
// transactions: about 1,000 x 256 / attempts-per-flush requests per 1,000.
// scripts/bench-logins.sh measures the rate on Azurite against a plain
// client's 100-entity transactions (README, Benchmarks).
// BoltStore commits a whole Flush in one bolt transaction (one fsync).
// BenchmarkFlush reports entities/s for both backends; BenchmarkAppendRecord
// shows the intake cost (no allocation).
package tablesink
