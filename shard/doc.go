// Package shard decides the table keys of login attempts: a hashed compound
// PartitionKey that spreads inserts over the key space (no hot partition, the
// cure for the prepend/append anti-pattern) and salts a single very hot user
// over several partitions, and an inverted-ticks RowKey that reads newest
// first (the log tail pattern).
//
// # Keys
//
//	PartitionKey = bucket "_" escaped(user) [ "~" salt ]
//	RowKey       = inverted-ticks "_" escaped(id)
//
// bucket is 4 lower-case hex digits: xxhash64(user) mod --partitions, and for
// salt s a SplitMix64 remix of that hash with s, so a user's salted
// partitions land in unrelated places of the key space rather than next to
// each other. salt is two digits, 00..(--hot-user-salts - 1). inverted-ticks
// is 9223372036854775807 minus the .NET ticks (100 ns since 0001-01-01 UTC)
// of the attempt, zero padded to 19 digits, so ascending RowKeys are newest
// first and "the latest N" is a $top=N range query. EscapeKey writes every
// byte Azure forbids in keys (/ \ # ? and control characters), '%', the salt
// delimiter '~', C1 controls and invalid UTF-8 as %XX, so keys are valid,
// reversible (UnescapeKey, SplitPartitionKey, ParseRowKey) and two different
// (user, salt) or (time, id) pairs never give the same key: the bucket and
// the ticks are fixed width and the only unescaped '~' is the salt's.
//
// Worked example with the defaults (256 buckets, salting from 1,000
// attempts/s, at most 16 salts): user "alice@example.com", id "01JDQ8" at
// 2026-11-21T18:04:05.1234567Z gives
//
//	PartitionKey 001e_alice@example.com        (normal rate)
//	PartitionKey 00b5_alice@example.com~01     (under attack: one of ~00..~15,
//	                                            chosen by a hash of the id)
//	RowKey       8584063226403541240_01JDQ8
//	NaiveKey     20261121180405                 (the anti-pattern, for comparison)
//
// and ReadKeys("alice@example.com") lists the 17 keys 001e_alice@example.com,
// 001a_alice@example.com~00, 00b5_alice@example.com~01 ... 00d9_alice@example.com~15.
//
// # Salting
//
// A Keyer estimates each user's rate with two count-min sketches (this
// second and the previous one, 4 x 8,192 atomic counters each: 256 KiB in
// all, whatever the number of users), as a sliding one-second window. A user
// estimated above HotRate is salted evenly over all Salts partitions (the
// salt is a hash of the event id modulo Salts), so each receives rate/Salts
// (1,250/s for a 20,000/s attack with the defaults), under Azure's
// 2,000 entities/s partition target, while the unsalted partition keeps at
// most about HotRate/s: the attempts counted before the estimate crossed it.
// Using every salt at once, rather than more salts as the rate grows, keeps
// the first second of an attack (when the estimate is still climbing) from
// overloading the first few salts. The decision is taken once, at intake:
// the caller stores the resulting PartitionKey with the attempt (in its
// write-ahead log), so a replay reuses it and the upsert stays idempotent.
// Reads never need the decision: ReadKeys returns the unsalted key and every
// salt, Salts+1 range queries at most. Each instance estimates rates on its
// own; with N instances keep N x HotRate below 2,000/s.
//
// # Performance
//
// PartitionKey costs two xxhash sums, four atomic increments and no
// allocation when dst has room; the simulation test and BenchmarkSimulation
// replay 10 million attempts (Zipf(1.1) over 1 million users plus one user
// attacked at 20,000/s) and report the hottest partition's inserts/s for
// these keys and for NaiveKey: 1,357/s (one of the attacked user's salts)
// against 100,000/s for the naive key, over about 500,000 partitions.
package shard
