// Package tablesink keeps login attempts in one Azure table per UTC day and
// the telemetry counters in a data series, on the Azure Table service or an
// embedded bbolt file with the same names, keys and queries.
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
// Package shard builds them: PartitionKey = 4-hex hash bucket "_" escaped
// user, plus "~NN" for a user hot enough to be salted; RowKey = 19-digit
// inverted .NET ticks "_" escaped id (newest first). For example, user
// alice@example.com, id 01JDQ8 at 2026-11-21T18:04:05.1234567Z is entity
// 001e_alice@example.com / 8584063226403541240_01JDQ8 of logins20261121 with
// properties User, Time (Edm.DateTime), Success, IP, UA, ID, and Props (the
// client's other fields as one JSON string: Azure property names must be
// identifiers and at most 252 per entity, which arbitrary fields are not).
//
// # Write path
//
// AppendRecord runs at intake: it decides the keys (the hot-user salting
// uses the intake clock), checks Azure's limits, and appends one JSON record
// line for the buffer, keyed by day table. Flush takes one table's records,
// groups them by PartitionKey into entity group transactions (at most 100
// entities and 4 MiB, one partition each, a RowKey at most once), and
// upserts them, --login-flush-parallel at a time, so a replayed or retried
// flush duplicates nothing. Transient errors (503, 500, timeouts, resets) are
// retried with exponential backoff and jitter; a missing table is created
// and the write retried; Flush returns nil only when everything is
// committed.
//
//	s, _ := tablesink.New(cfg, tablesink.NewAzureStore(svc), reg, log)
//	key, rec, err := s.AppendRecord(rec[:0], &attempt) // at intake
//	err = s.Flush(ctx, key, records)                    // from the buffer
//	latest, err := s.Tail(ctx, "alice@example.com", 7, 50)
//
// # Read path
//
// Tail reads the newest attempts of a user: in each day table from the
// newest, one $top=limit range query per partition the user can be under
// (shard's ReadKeys: 1 + --hot-user-salts), in parallel, merged by RowKey,
// stopping once the limit is reached.
//
// # Stats
//
// Counters counts events per service, hour and level on the intake hot
// path (no allocation) and merges them into table "stats": one entity per
// service, day and instance holding H00..H23 and H00_info..H23_fatal,
// updated with read, add and merge under the ETag (data series pattern).
// ReadStats sums the instances.
//
// # Limits enforced here
//
// Azurite accepts transactions over two partitions, over 100 entities
// (returning an unparseable response), entities over 1 MiB and more than
// 252 properties; Azure does not. CheckBatch and CheckEntity enforce Azure's
// limits in both Stores before anything is sent.
//
// # Performance
//
// A transaction holds one partition, and a partition is one user, so the
// long tail of users gives transactions of a few entities: the flush rate
// is bounded by requests in flight (--login-flush-parallel), not batch
// size. One-entity batches go as plain upserts. BoltStore commits a whole
// Flush in one bolt transaction (one fsync). BenchmarkFlush reports
// entities/s for both backends; BenchmarkAppendRecord shows the intake cost
// (no allocation).
package tablesink
