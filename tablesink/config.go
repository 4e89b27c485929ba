package tablesink

import (
	"fmt"
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
	Shard         shard.Config  // --partitions, --hot-user-rate, --hot-user-salts
}

// DefaultConfig returns the defaults: 60 days, 16 transactions in flight
// (several keep the service busy while each round trip waits), 5 tries,
// and flushes of 8 MiB, at the latest 10 s after the oldest attempt or
// 500 ms after the last one.
//
// A transaction covers one bucket, so a flush costs about one request per
// bucket it touches and per 100 of its attempts there, and a flush of a few
// attempts nearly as much as a full one: login attempts are flushed by
// size, not at --flush-interval. Larger chunks fill transactions better,
// but the first request of a burst waits for its first full chunk; 8 MiB
// writes a large burst while it still arrives. A quiet 500 ms ends a burst,
// and 10 s bounds how late a lookup sees an attempt under a trickle.
// docs/performance.md has the requests per 1,000 attempts at each size.
func DefaultConfig() Config {
	return Config{RetentionDays: 60, Parallel: 16, FlushBytes: 8 << 20, FlushInterval: 10 * time.Second, FlushQuiet: 500 * time.Millisecond,
		Retries: 5, Shard: shard.DefaultConfig()}
}

// RegisterFlags adds the login-table flags and shard's flags to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.RetentionDays, "login-retention-days", c.RetentionDays, "keep login attempts this many days: older day tables are deleted whole, attempts older than this are refused")
	fs.IntVar(&c.Parallel, "login-flush-parallel", c.Parallel, "entity group transactions in flight per login table flush")
	flagutil.BytesVar(fs, &c.FlushBytes, "login-flush-bytes", c.FlushBytes, "flush the login attempts of a day when they hold this many bytes (instead of --flush-bytes): larger flushes fill more of each bucket's 100-entity transactions, smaller ones start writing a burst sooner (at most a quarter of --buffer-bytes, at least --flush-bytes)")
	fs.DurationVar(&c.FlushInterval, "login-flush-interval", c.FlushInterval, "flush the login attempts of a day at the latest when the oldest is this old (instead of --flush-interval; with --ack flush, --flush-interval if shorter)")
	fs.DurationVar(&c.FlushQuiet, "login-flush-quiet", c.FlushQuiet, "flush the login attempts of a day as soon as none has arrived for this long (0: only by size and --login-flush-interval)")
	fs.IntVar(&c.Retries, "login-flush-retries", c.Retries, "tries of one transaction on transient storage errors (503, 500, timeouts) before the flush fails and is retried later")
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
	return c.Shard.Validate()
}
