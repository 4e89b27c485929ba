package shard

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Config holds the key-spreading settings.
type Config struct {
	// Partitions is the number of hash buckets the PartitionKey prefix is
	// drawn from (1..65536, rendered as 4 hex digits). Changing it moves every
	// user to another bucket: keep it fixed for as long as tables within the
	// retention hold data, or their attempts become unreadable.
	Partitions int
	// HotRate is the per-user rate (attempts/s, as seen by this instance) at
	// which a user's attempts start being salted over several partitions.
	// With N instances behind a load balancer each sees about 1/N of a user's
	// rate: keep HotRate*N under Azure's 2,000 entities/s partition target.
	HotRate float64
	// Salts is the maximum number of salted partitions per user (0 disables
	// salting, else 2..100). A hot user's attempts are spread evenly over
	// all of them; reads query all Salts+1 partitions, so lowering it hides
	// attempts stored under the higher salts until their tables expire.
	Salts int
}

// DefaultConfig: 256 buckets, salting from 1,000 attempts/s per user, up to
// 16 salts. One user can then take 16 x 2,000 = 32,000 inserts/s within the
// partition targets (more than an account's 20,000/s), and a tail read is at
// most 17 range queries.
func DefaultConfig() Config {
	return Config{Partitions: 256, HotRate: 1000, Salts: 16}
}

// RegisterFlags adds --partitions, --hot-user-rate and --hot-user-salts,
// with c's current values as defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "hash buckets of the login PartitionKey prefix (1..65536); do not change while login tables hold data")
	fs.Float64Var(&c.HotRate, "hot-user-rate", c.HotRate, "attempts/s of one user (seen by this instance) above which the user's attempts are salted over several partitions")
	fs.IntVar(&c.Salts, "hot-user-salts", c.Salts, "maximum salted partitions per hot user (0 disables salting, else 2..100); reads query all of them")
}

// Validate checks the ranges.
func (c *Config) Validate() error {
	if c.Partitions < 1 || c.Partitions > 1<<16 {
		return fmt.Errorf("cannot use --partitions %d: want 1..65536", c.Partitions)
	}
	if !(c.HotRate > 0) {
		return fmt.Errorf("cannot use --hot-user-rate %v: want a positive rate (attempts/s)", c.HotRate)
	}
	if c.Salts != 0 && (c.Salts < 2 || c.Salts > 100) {
		return fmt.Errorf("cannot use --hot-user-salts %d: want 0 (no salting) or 2..100", c.Salts)
	}
	return nil
}
