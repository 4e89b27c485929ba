package shard

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Config holds the key-spreading settings.
type Config struct {
	// Partitions is the number of hash buckets, the PartitionKeys (1..65536,
	// rendered as 4 hex digits). Changing it moves every
	// user to another bucket: keep it fixed for as long as tables within the
	// retention hold data, or their attempts become unreadable.
	Partitions int
	// HotRate is the per-user rate (attempts/s, across every instance of
	// the cluster) at which a user's attempts start being salted over
	// several partitions: each instance salts a user once its own share
	// crosses HotRate divided by the live instances (Keyer.SetInstances).
	HotRate float64
	// Salts is the maximum number of salted partitions per user (0 disables
	// salting, else 2..100). A hot user's attempts are spread evenly over
	// the buckets of all of them; the salted marker records the count, so
	// reads find them whatever the flag says later.
	Salts int
}

// DefaultConfig: 256 buckets, salting from 500 attempts/s per user, up to
// 64 salts. An attack at 20,000 attempts/s on one user then adds about 312/s
// to each of its buckets, and the simulation (1 million users, Zipf 1.1,
// 100,000 attempts/s with the attack) keeps every bucket under 1,400/s,
// below Azure's 2,000 entities/s partition target. Reading a user who was
// never salted that day is one range query; a salted user's, at most 65.
func DefaultConfig() Config {
	return Config{Partitions: 256, HotRate: 500, Salts: 64}
}

// RegisterFlags adds --partitions, --hot-user-rate and --hot-user-salts,
// with c's current values as defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "hash buckets the login PartitionKey is drawn from (1..65536); do not change while login tables hold data")
	fs.Float64Var(&c.HotRate, "hot-user-rate", c.HotRate, "attempts/s of one user across every instance of the cluster above which the user's attempts are salted over several partitions (each instance salts once its own share passes this rate divided by the live instances)")
	fs.IntVar(&c.Salts, "hot-user-salts", c.Salts, "salted partitions per hot user (0 disables salting, else 2..100); reads of a user who was salted that day query all of them")
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
