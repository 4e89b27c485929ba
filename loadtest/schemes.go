package loadtest

import (
	"fmt"

	"ingest/shard"
)

// defaultSchemes returns the PartitionKey schemes the report compares: the
// server's hashed compound key (package shard, with hot-user salting) and
// the naive time-based key. partitions 0 takes shard's default bucket
// count. Each call builds a fresh Keyer: its hot-user detection follows the
// attempts it is fed, in time order, as the server's would.
func defaultSchemes(partitions int) []Scheme {
	cfg := shard.DefaultConfig()
	if partitions > 0 {
		cfg.Partitions = partitions
	}
	k := shard.NewKeyer(cfg)
	return []Scheme{
		{
			Name:        "hashed",
			Description: fmt.Sprintf("hash bucket (of %d) + user, users above %g attempts/s salted over up to %d partitions", cfg.Partitions, cfg.HotRate, cfg.Salts),
			Key:         k.PartitionKey,
		},
		{
			Name:        "naive",
			Description: "attempt time truncated to the second (the prepend anti-pattern)",
			Key:         naiveKey,
		},
	}
}

func naiveKey(dst, user, id []byte, unixNano int64) []byte { return shard.NaiveKey(dst, unixNano) }
