package blobsink

import (
	"fmt"
	"ingest/internal/flagutil"

	"github.com/spf13/pflag"
)

// Config tunes the sink.
type Config struct {
	MaxBlobBytes int64
	Compression  Compression
	// MaxBlocks closes a blob before Azure's 50,000-block limit.
	MaxBlocks int
	// ChunkBytes bounds one appended block: its raw bytes, and its bytes
	// as stored once compressed.
	ChunkBytes int
	// ClaimSpread is how many numbers past the highest listed (or past a
	// taken one) a claim picks at random from once the sink has met
	// another writer (claim.go): about twice the instances sharing the
	// account keeps failed creates under one per instance and hour.
	ClaimSpread int
}

// DefaultConfig returns the settings the flags default to. A block takes
// up to Azure's whole append limit of lines (a compressed block that would
// come out larger is split: encode.go), so every flush is one append and
// one metadata write: with Azure (or Azurite) spending a few ms of its own
// per request, a larger --flush-bytes is fewer requests per GB. The margin
// below the block limit leaves room to close a blob.
func DefaultConfig() Config {
	return Config{
		MaxBlobBytes: 256 << 20,
		Compression:  CompressNone,
		MaxBlocks:    MaxBlocks - 1000,
		ChunkBytes:   MaxAppendBytes,
		ClaimSpread:  64,
	}
}

// RegisterFlags adds the sink's flags to fs, with c's values as their
// defaults (start from DefaultConfig). MaxBlocks and ChunkBytes have no
// flags.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	flagutil.BytesVar(fs, &c.MaxBlobBytes, "blob-max-bytes", c.MaxBlobBytes, "close a blob and claim the next number past this size")
	fs.StringVar((*string)(&c.Compression), "blob-compression", string(c.Compression), "compress each flushed block as an independent frame: zstd or gzip (blob names end .log.zst / .log.gz); empty = plain .log")
	fs.IntVar(&c.ClaimSpread, "blob-claim-spread", c.ClaimSpread, "once another instance took a blob number, claim at random among this many numbers past the highest; about twice the instances sharing the account")
}

// withDefaults returns c with MaxBlocks and ChunkBytes set as in
// DefaultConfig where they are zero or beyond Azure's limits, and
// ClaimSpread where it is zero.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxBlocks <= 0 || c.MaxBlocks > MaxBlocks {
		c.MaxBlocks = d.MaxBlocks
	}
	if c.ChunkBytes <= 0 || c.ChunkBytes > d.ChunkBytes {
		c.ChunkBytes = d.ChunkBytes
	}
	if c.ClaimSpread == 0 {
		c.ClaimSpread = d.ClaimSpread
	}
	return c
}

// Validate checks the settings. It changes nothing: NewSink brings
// MaxBlocks and ChunkBytes within Azure's limits.
func (c *Config) Validate() error {
	switch c.Compression {
	case CompressNone, CompressZstd, CompressGzip:
	default:
		return fmt.Errorf("cannot use --blob-compression %q: want zstd, gzip or nothing", c.Compression)
	}
	if c.ClaimSpread < 0 || c.ClaimSpread > 10000 {
		return fmt.Errorf("cannot use --blob-claim-spread %d: want 1..10000 (about twice the instances sharing the account)", c.ClaimSpread)
	}
	if c.MaxBlobBytes <= 0 {
		return fmt.Errorf("cannot use --blob-max-bytes %d: it must be positive", c.MaxBlobBytes)
	}
	return nil
}
