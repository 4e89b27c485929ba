package tablesink

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
	"ingest/shard"
)

// Config holds the login-table settings. It includes shard's key settings:
// RegisterFlags registers them too, so a caller registers tablesink's Config
// and not shard's separately.
type Config struct {
	RetentionDays int           // --login-retention-days: day tables older than this are deleted
	Parallel      int           // --login-flush-parallel: transactions in flight per Flush
	FlushBytes    int64         // --login-flush-bytes: the buffer's chunk size for login attempts (ChunkBytes)
	FlushInterval time.Duration // --login-flush-interval: the buffer's flush age for login attempts (FlushAge)
	FlushQuiet    time.Duration // --login-flush-quiet: login attempts are flushed once none came for this long (FlushQuiet)
	Retries       int           // --login-flush-retries: tries of a transaction on transient errors
	Instance      string        // --stats-instance: this instance's writer entity in the stats table
	Shard         shard.Config  // --partitions, --hot-user-rate, --hot-user-salts
}

// DefaultConfig returns the defaults: 60 days, 16 transactions in flight
// (a flush holds a few transactions per bucket; several in flight keep
// the service busy while each round trip waits), flushes of 8 MiB, 5
// tries, the host name as instance.
//
// Why 8 MiB: a transaction covers one bucket, so a flush of n attempts
// costs about one request per bucket and per 100 of its attempts, and at
// least one per bucket it touches. An attempt takes about 225 bytes in the
// buffer (the load generator's): 4 MiB (--flush-bytes) is some 18,600
// attempts, 73 per bucket of 256, one transaction each and a second for
// the busiest buckets, about 17 requests per 1,000 attempts; 8 MiB is some
// 37,000, 146 per bucket, about 14 per 1,000; 16 MiB some 74,000, about
// 12 (10 is the floor). But the first request of a burst waits for its
// first full chunk, or for the burst's end: with 8 MiB a burst of 60,000
// attempts is written while it still arrives, in two flushes (14 requests
// per 1,000, where one 16 MiB flush takes 12, after the burst).
//
// Why 10 s and 500 ms: for the same reason a flush of a few attempts costs
// nearly as much as a full one, so the login attempts of a day are not
// flushed at --flush-interval (2 s) while more keep arriving, only once
// they fill a chunk, once none came for 500 ms (a burst is over: no reason
// to wait), or at the latest once the oldest is 10 s old, so a lookup sees
// an attempt within about 10 s even under a steady trickle.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{RetentionDays: 60, Parallel: 16, FlushBytes: 8 << 20, FlushInterval: 10 * time.Second, FlushQuiet: 500 * time.Millisecond,
		Retries: 5, Instance: host, Shard: shard.DefaultConfig()}
}

// RegisterFlags adds the login-table flags and shard's flags to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.RetentionDays, "login-retention-days", c.RetentionDays, "keep login attempts this many days: older day tables are deleted whole, attempts older than this are refused")
	fs.IntVar(&c.Parallel, "login-flush-parallel", c.Parallel, "entity group transactions in flight per login table flush")
	flagutil.BytesVar(fs, &c.FlushBytes, "login-flush-bytes", c.FlushBytes, "flush the login attempts of a day when they hold this many bytes (instead of --flush-bytes): larger flushes fill more of each bucket's 100-entity transactions, smaller ones start writing a burst sooner (at most a quarter of --buffer-bytes, at least --flush-bytes)")
	fs.DurationVar(&c.FlushInterval, "login-flush-interval", c.FlushInterval, "flush the login attempts of a day at the latest when the oldest is this old (instead of --flush-interval; with --ack flush, --flush-interval if shorter)")
	fs.DurationVar(&c.FlushQuiet, "login-flush-quiet", c.FlushQuiet, "flush the login attempts of a day as soon as none has arrived for this long (0: only by size and --login-flush-interval)")
	fs.IntVar(&c.Retries, "login-flush-retries", c.Retries, "tries of one transaction on transient storage errors (503, 500, timeouts) before the flush fails and is retried later")
	fs.StringVar(&c.Instance, "stats-instance", c.Instance, "this instance's name: its entity in the stats table and its entry in the cluster table (default the host name, which a StatefulSet pod keeps across restarts; give each instance its own)")
	c.Shard.RegisterFlags(fs)
}

// Validate checks the settings.
func (c *Config) Validate() error {
	if c.RetentionDays < 1 {
		return fmt.Errorf("cannot use --login-retention-days %d: want at least 1", c.RetentionDays)
	}
	if c.Parallel < 1 {
		return fmt.Errorf("cannot use --login-flush-parallel %d: want at least 1", c.Parallel)
	}
	if c.FlushBytes < 64<<10 {
		return fmt.Errorf("cannot use --login-flush-bytes %d: want at least 64KiB", c.FlushBytes)
	}
	if c.FlushInterval <= 0 {
		return fmt.Errorf("cannot use --login-flush-interval %v: want a positive duration", c.FlushInterval)
	}
	if c.FlushQuiet < 0 || c.FlushQuiet > c.FlushInterval {
		return fmt.Errorf("cannot use --login-flush-quiet %v: want 0 (none) up to --login-flush-interval (%v)", c.FlushQuiet, c.FlushInterval)
	}
	if c.Retries < 1 {
		return fmt.Errorf("cannot use --login-flush-retries %d: want at least 1", c.Retries)
	}
	if c.Instance == "" {
		return errors.New("cannot use an empty --stats-instance: name this instance (the host name could not be read)")
	}
	return c.Shard.Validate()
}
