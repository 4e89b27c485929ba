package buffer

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
)

// AckMode is when Add returns: the value of --ack.
type AckMode string

// The ack modes.
const (
	AckWAL    AckMode = "wal"    // once the batch is in the fsync'd WAL
	AckMemory AckMode = "memory" // once buffered; a crash loses it
	AckFlush  AckMode = "flush"  // once in durable storage
)

// Config tunes the buffer.
type Config struct {
	Ack             AckMode
	FlushInterval   time.Duration
	FlushBytes      int64
	BufferBytes     int64
	FlushWorkers    int
	WALSegmentBytes int64
	// WALSpareSegments is how many segments the WAL keeps for reuse once
	// all their events are stored, instead of deleting them (0: none).
	WALSpareSegments int
	// AckTimeout bounds how long Add waits for storage with --ack flush.
	AckTimeout time.Duration
	// WALMaxBytes bounds the write-ahead log on disk: past it new batches
	// are refused (503) until flushes let segments go.
	WALMaxBytes int64
	// BudgetWait is how long Add waits for memory before failing with ErrFull.
	BudgetWait time.Duration
	// RetryMin and RetryMax bound the backoff between flush attempts
	// (zero: the retry package's defaults, 100 ms and 30 s).
	RetryMin, RetryMax time.Duration
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{
		Ack:              AckWAL,
		FlushInterval:    2 * time.Second,
		FlushBytes:       4 << 20,
		BufferBytes:      256 << 20,
		FlushWorkers:     8,
		WALSegmentBytes:  64 << 20,
		WALSpareSegments: 8,
		AckTimeout:       30 * time.Second,
		WALMaxBytes:      4 << 30,
		BudgetWait:       100 * time.Millisecond,
	}
}

// RegisterFlags adds the buffer's flags to fs, with c's values as their
// defaults (start from DefaultConfig). BudgetWait, RetryMin and RetryMax
// have no flags.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar((*string)(&c.Ack), "ack", string(c.Ack), "when to acknowledge a batch: wal (in the fsync'd write-ahead log), memory (buffered only; a crash loses it), flush (in durable storage)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", c.FlushInterval, "flush a key's buffer when its oldest event is this old")
	flagutil.BytesVar(fs, &c.FlushBytes, "flush-bytes", c.FlushBytes, "flush a key's buffer when it holds this many bytes")
	flagutil.BytesVar(fs, &c.BufferBytes, "buffer-bytes", c.BufferBytes, "memory budget for accepted events not yet flushed; past it requests get 429")
	fs.IntVar(&c.FlushWorkers, "flush-workers", c.FlushWorkers, "concurrent flushes per sink")
	flagutil.BytesVar(fs, &c.WALSegmentBytes, "wal-segment-bytes", c.WALSegmentBytes, "write-ahead log segment size")
	fs.IntVar(&c.WALSpareSegments, "wal-spare-segments", c.WALSpareSegments, "write-ahead log segments kept for reuse once stored, instead of deleted (0: none): overwriting a segment costs the disk less than deleting one and creating the next")
	fs.DurationVar(&c.AckTimeout, "ack-timeout", c.AckTimeout, "with --ack flush, the longest a request waits for storage; then it gets 202 saying the batch is in the write-ahead log and will be stored (do not resend)")
	flagutil.BytesVar(fs, &c.WALMaxBytes, "wal-max-bytes", c.WALMaxBytes, "bound of the write-ahead log on disk (events not yet stored); past it requests get 503 until storage catches up")
}

// withDefaults returns c with the settings a Config built in code may
// leave zero (WALSegmentBytes, AckTimeout, WALMaxBytes) set as in
// DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.AckTimeout == 0 {
		c.AckTimeout = d.AckTimeout
	}
	if c.WALSegmentBytes <= 0 {
		c.WALSegmentBytes = d.WALSegmentBytes
	}
	if c.WALMaxBytes == 0 {
		c.WALMaxBytes = d.WALMaxBytes
	}
	return c
}

// Validate checks the settings (zero WALSegmentBytes, AckTimeout and
// WALMaxBytes stand for their defaults). It changes nothing.
func (c *Config) Validate() error {
	return c.withDefaults().check()
}

func (c Config) check() error {
	switch c.Ack {
	case AckWAL, AckMemory, AckFlush:
	default:
		return fmt.Errorf("cannot use --ack %q: want wal, memory or flush", c.Ack)
	}
	if c.FlushInterval <= 0 {
		return fmt.Errorf("cannot use --flush-interval %v: it must be positive", c.FlushInterval)
	}
	if c.FlushBytes <= 0 {
		return fmt.Errorf("cannot use --flush-bytes %d: it must be positive", c.FlushBytes)
	}
	if c.BufferBytes < c.FlushBytes {
		return fmt.Errorf("cannot use --buffer-bytes %d below --flush-bytes %d", c.BufferBytes, c.FlushBytes)
	}
	if c.FlushWorkers <= 0 {
		return fmt.Errorf("cannot use --flush-workers %d: it must be positive", c.FlushWorkers)
	}
	if c.AckTimeout < 0 {
		return fmt.Errorf("cannot use --ack-timeout %v: it must be positive", c.AckTimeout)
	}
	if c.WALSpareSegments < 0 {
		return fmt.Errorf("cannot use --wal-spare-segments %d: want 0 or more", c.WALSpareSegments)
	}
	if c.Ack != AckMemory && c.WALMaxBytes < 2*c.WALSegmentBytes {
		return fmt.Errorf("cannot use --wal-max-bytes %d: it must be at least twice --wal-segment-bytes (%d), since segments are deleted whole", c.WALMaxBytes, c.WALSegmentBytes)
	}
	return nil
}
