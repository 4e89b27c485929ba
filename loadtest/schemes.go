package loadtest

import (
	"github.com/cespare/xxhash/v2"
)

// fallbackPartitions is the bucket count when --partitions is 0.
const fallbackPartitions = 64

// defaultSchemes returns the PartitionKey schemes the report compares: the
// project's hashed compound key and the naive time-based key.
func defaultSchemes(partitions int) []Scheme {
	if partitions <= 0 {
		partitions = fallbackPartitions
	}
	return []Scheme{
		{Name: "hashed", Description: "hash bucket of the user (local stand-in for the shard package)", Key: bucketKey(partitions)},
		{Name: "naive", Description: "attempt time truncated to the second (the prepend anti-pattern)", Key: secondKey},
	}
}

// bucketKey hashes the user into one of n fixed-width buckets.
func bucketKey(n int) KeyFunc {
	return func(dst, user, id []byte, unixNano int64) []byte {
		return appendPadded(dst, xxhash.Sum64(user)%uint64(n), 4)
	}
}

// secondKey is the attempt's Unix second, fixed width: every insert of a
// second lands in one partition.
func secondKey(dst, user, id []byte, unixNano int64) []byte {
	return appendPadded(dst, uint64(unixNano/1e9), 10)
}
