package loadtest

import (
	"fmt"

	"ingest/shard"
)

// defaultSchemes returns the PartitionKey schemes the report compares: the
// server's hashed compound key (package shard, with hot-user salting) and
// the naive time-based key. partitions 0 takes shard's default bucket
// count, hotRate 0 its --hot-user-rate. replicas instances each judge hot
// users on the attempts they receive, with hotRate shared among them (the
// server's rule: an instance salts a user once its own share passes
// --hot-user-rate over the live instances). Each call builds fresh Keyers:
// their hot-user detection follows the attempts they are fed, in time
// order, as the servers' would.
func defaultSchemes(partitions int, hotRate float64, replicas int) []Scheme {
	cfg := shard.DefaultConfig()
	if partitions > 0 {
		cfg.Partitions = partitions
	}
	if hotRate > 0 {
		cfg.HotRate = hotRate
	}
	replicas = max(replicas, 1)
	share := cfg
	share.HotRate = cfg.HotRate / float64(replicas)
	keyers := make([]*shard.Keyer, replicas)
	for i := range keyers {
		keyers[i] = shard.NewKeyer(share)
	}
	return []Scheme{
		{
			Name: "hashed",
			Description: fmt.Sprintf("hash bucket (of %d) + user, users above %g attempts/s (over %d instances: %g each) salted over up to %d partitions",
				cfg.Partitions, cfg.HotRate, replicas, share.HotRate, cfg.Salts),
			Key: func(dst, user, id []byte, unixNano int64, replica int) []byte {
				return keyers[replica%replicas].PartitionKey(dst, user, id, unixNano)
			},
		},
		{
			Name:        "naive",
			Description: "attempt time truncated to the second (the prepend anti-pattern)",
			Key:         naiveKey,
		},
	}
}

func naiveKey(dst, user, id []byte, unixNano int64, _ int) []byte {
	return shard.NaiveKey(dst, unixNano)
}
