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
	// ChunkBytes bounds the raw bytes of one appended block (before compression).
	ChunkBytes int
}

// RegisterFlags adds the sink's flags to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	flagutil.BytesVar(fs, &c.MaxBlobBytes, "blob-max-bytes", 256<<20, "close a blob and claim the next number past this size")
	fs.StringVar((*string)(&c.Compression), "blob-compression", "", "compress each flushed block as an independent frame: zstd or gzip (blob names end .log.zst / .log.gz); empty = plain .log")
	c.MaxBlocks = MaxBlocks - 1000
	c.ChunkBytes = MaxAppendBytes - 64<<10
}

// Validate checks the settings.
func (c *Config) Validate() error {
	switch c.Compression {
	case CompressNone, CompressZstd, CompressGzip:
	default:
		return fmt.Errorf("cannot use --blob-compression %q: want zstd, gzip or nothing", c.Compression)
	}
	if c.MaxBlobBytes <= 0 {
		return fmt.Errorf("cannot use --blob-max-bytes %d: it must be positive", c.MaxBlobBytes)
	}
	if c.MaxBlocks <= 0 || c.MaxBlocks > MaxBlocks {
		c.MaxBlocks = MaxBlocks - 1000
	}
	// The margin covers compression growing incompressible data slightly.
	if c.ChunkBytes <= 0 || c.ChunkBytes > MaxAppendBytes-64<<10 {
		c.ChunkBytes = MaxAppendBytes - 64<<10
	}
	return nil
}
