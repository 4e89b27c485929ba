// Package shard decides the table keys of login attempts: a hash bucket as
// the PartitionKey, so inserts spread evenly over the key space (no hot
// partition, the cure for the prepend/append anti-pattern) while every
// bucket gathers many users' attempts and entity group transactions fill up;
// a very hot user salted over several buckets; and a compound RowKey that
// keeps one user's attempts one range query away, newest first (the log
// tail pattern).
//
// # Keys
//
//	PartitionKey = bucket
//	RowKey       = escaped(user) "~" inverted-ticks "_" escaped(id)
//
// bucket is 4 lower-case hex digits: xxhash64(user) mod --partitions, and
// for a salted attempt a SplitMix64 remix of that hash with the salt, so a
// user's salted buckets land in unrelated places of the key space.
// inverted-ticks is 9223372036854775807 minus the .NET ticks (100 ns since
// 0001-01-01 UTC) of the attempt, zero padded to 19 digits. EscapeKey
// writes every byte Azure forbids in keys (/ \ # ? and control
// characters), '%', '~', C1 controls and invalid UTF-8 as %XX, so keys are
// valid and reversible (UnescapeKey, ParseRowKey), and the first '~' of a
// RowKey always ends the user: [user~, user~:) (UserRange) holds exactly
// that user's attempts, ascending newest first, and "the latest N" is a
// $top=N range query inside the bucket. The time is fixed width, so the id
// after it needs no delimiter, and a retried insert (same user, time, id) is
// an idempotent upsert.
//
// Worked example with the defaults (256 buckets, salting from 500
// attempts/s, 64 salts): user "alice@example.com", id "01JDQ8" at
// 2026-11-21T18:04:05.1234567Z is
//
//	PartitionKey 001e                                  (normal rate)
//	PartitionKey 00b5                                  (under attack: the bucket of salt 01 of 00..63,
//	                                                    chosen by a hash of the id)
//	RowKey       alice@example.com~8584063226403541240_01JDQ8
//	NaiveKey     20261121180405                        (the anti-pattern, for comparison)
//
// and bucket 001e also holds the attempts of every other user hashed to it
// (about 1/256 of all), so one flush of 20,000 attempts makes transactions
// of about 80 entities instead of one per user.
//
// # Salting
//
// A Keyer estimates each user's rate with two count-min sketches (this
// second and the previous one, 4 x 8,192 atomic counters each: 256 KiB in
// all, whatever the number of users), as a sliding one-second window. A user
// estimated above HotRate is salted evenly over all Salts buckets (the salt
// is a hash of the event id modulo Salts), so each receives rate/Salts (312/s
// for a 20,000/s attack with the defaults), while the unsalted bucket keeps
// at most about HotRate/s: the attempts counted before the estimate crossed
// it. Using every salt at once, rather than more salts as the rate grows,
// keeps the first second of an attack (when the estimate is still climbing)
// from overloading the first few salts. The decision is taken once, at
// intake: the caller stores the resulting PartitionKey with the attempt (in
// its write-ahead log), so a replay reuses it and the upsert stays
// idempotent. The writer also stores a marker row (SaltedMarker) in the
// user's unsalted bucket, which sorts first in the user's range: a read
// starts with one range query there and fans out to the salted buckets
// (ReadKeys) only when the marker says so.
//
// HotRate is a rate across the cluster. Each instance estimates rates on
// its own and salts a user once its own share crosses HotRate/N, N the live
// instances (Keyer.SetInstances, from the cluster membership). Whatever way
// a user's attempts spread over the instances, each puts at most about
// HotRate/N per second of them into the unsalted bucket, so the bucket
// takes at most about HotRate per second from the whole cluster; an
// attack spread evenly is salted as soon as it crosses HotRate, one that
// lands on a single instance a little early (at HotRate/N). Sharing the
// sketches through storage would give the exact cluster rate but cost
// requests per second per instance and a round trip of delay, for a bound
// no better than this one.
//
// # The first key scheme
//
// Version 1 used PartitionKey = bucket "_" user ["~" salt], RowKey =
// inverted-ticks "_" id: one partition per user, so nearly every
// transaction held one or two entities and a flush was one round trip per
// attempt. Its keys are kept (Legacy*) so tables written under it stay
// readable until they age out.
//
// # Performance
//
// PartitionKey costs two xxhash sums, four atomic increments and no
// allocation when dst has room. BenchmarkSimulation replays a Zipf
// population with one attacked user and reports the hottest partition's
// inserts per second for these keys and for NaiveKey (figures in
// docs/performance.md).
package shard
