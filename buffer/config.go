package buffer

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
)

// Ack modes: when Add returns.
const (
	AckWAL    = "wal"
	AckMemory = "memory"
	AckFlush  = "flush"
)

// Config tunes the buffer.
type Config struct {
	Ack             string
	FlushInterval   time.Duration
	FlushBytes      int64
	BufferBytes     int64
	FlushWorkers    int
	WALSegmentBytes int64
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

// RegisterFlags adds the buffer's flags to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Ack, "ack", AckWAL, "when to acknowledge a batch: wal (in the fsync'd write-ahead log), memory (buffered only; a crash loses it), flush (in durable storage)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", 2*time.Second, "flush a key's buffer when its oldest event is this old")
	flagutil.BytesVar(fs, &c.FlushBytes, "flush-bytes", 4<<20, "flush a key's buffer when it holds this many bytes")
	flagutil.BytesVar(fs, &c.BufferBytes, "buffer-bytes", 256<<20, "memory budget for accepted events not yet flushed; past it requests get 429")
	fs.IntVar(&c.FlushWorkers, "flush-workers", 8, "concurrent flushes per sink")
	flagutil.BytesVar(fs, &c.WALSegmentBytes, "wal-segment-bytes", 64<<20, "write-ahead log segment size")
	fs.DurationVar(&c.AckTimeout, "ack-timeout", 30*time.Second, "with --ack flush, the longest a request waits for storage; then it gets 202 saying the batch is in the write-ahead log and will be stored (do not resend)")
	flagutil.BytesVar(fs, &c.WALMaxBytes, "wal-max-bytes", 4<<30, "bound of the write-ahead log on disk (events not yet stored); past it requests get 503 until storage catches up")
	c.BudgetWait = 100 * time.Millisecond
}

// Validate checks the settings.
func (c *Config) Validate() error {
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
	if c.AckTimeout == 0 {
		c.AckTimeout = 30 * time.Second
	}
	if c.WALSegmentBytes <= 0 {
		c.WALSegmentBytes = 64 << 20
	}
	if c.WALMaxBytes == 0 {
		c.WALMaxBytes = 4 << 30
	}
	if c.Ack != AckMemory && c.WALMaxBytes < 2*c.WALSegmentBytes {
		return fmt.Errorf("cannot use --wal-max-bytes %d: it must be at least twice --wal-segment-bytes (%d), since segments are deleted whole", c.WALMaxBytes, c.WALSegmentBytes)
	}
	return nil
}
