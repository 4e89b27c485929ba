package blobsink

import (
	"math"
	"testing"

	"ingest/internal/configtest"
)

func TestConfigFlagsDefaultToDefaultConfig(t *testing.T) {
	configtest.FlagsDefault(t, DefaultConfig)
}

func TestConfigValidateOnlyChecks(t *testing.T) {
	f := func(c Config, wantErr bool) {
		t.Helper()
		configtest.Validate(t, c, wantErr)
	}
	f(DefaultConfig(), false)
	f(Config{MaxBlobBytes: 1 << 20}, false) // MaxBlocks and ChunkBytes: NewSink's defaults
	f(Config{MaxBlobBytes: 1 << 20, MaxBlocks: MaxBlocks + 1, ChunkBytes: MaxAppendBytes}, false)
	f(Config{}, true)
	f(Config{MaxBlobBytes: 1 << 20, Compression: "lz4"}, true)
}

// Azure's documented limits for append blobs, written out here rather
// than taken from the package so that raising a limit in the code fails
// the test: a block of at most 100 MiB (Append Block from service version
// 2022-11-02; the azblob client sends a later one) and at most 50,000
// committed blocks per blob.
const (
	azureMaxAppendBlockBytes = 100 * 1024 * 1024
	azureMaxBlocksPerBlob    = 50_000
)

func TestNewSinkKeepsBlocksWithinAzureLimits(t *testing.T) {
	store, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                  string
		maxBlocks, chunkBytes int
	}{
		{"zero", 0, 0},
		{"negative", -1, -1},
		{"smallest", 1, 1},
		{"small", 3, 500},
		{"at the limits", azureMaxBlocksPerBlob, azureMaxAppendBlockBytes},
		{"one past the limits", azureMaxBlocksPerBlob + 1, azureMaxAppendBlockBytes + 1},
		{"old 4 MiB block, many blocks", 10 * azureMaxBlocksPerBlob, 4 * 1024 * 1024},
		{"largest", math.MaxInt, math.MaxInt},
		{"smallest int", math.MinInt, math.MinInt},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, maxBlob := range []int64{1, 1 << 20, math.MaxInt64} {
				s, err := NewSink(store, Config{MaxBlobBytes: maxBlob, MaxBlocks: c.maxBlocks, ChunkBytes: c.chunkBytes}, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := s.cfg
				if got.MaxBlocks < 1 || got.MaxBlocks > azureMaxBlocksPerBlob {
					t.Errorf("--blob-max-bytes %d, MaxBlocks %d: the sink closes a blob after %d blocks, want 1..%d", maxBlob, c.maxBlocks, got.MaxBlocks, azureMaxBlocksPerBlob)
				}
				if got.ChunkBytes < 1 || got.ChunkBytes > azureMaxAppendBlockBytes {
					t.Errorf("--blob-max-bytes %d, ChunkBytes %d: the sink appends blocks of up to %d bytes, want 1..%d", maxBlob, c.chunkBytes, got.ChunkBytes, azureMaxAppendBlockBytes)
				}
				// A setting within the limits is the caller's to keep.
				if c.maxBlocks >= 1 && c.maxBlocks <= azureMaxBlocksPerBlob && got.MaxBlocks != c.maxBlocks {
					t.Errorf("MaxBlocks %d became %d", c.maxBlocks, got.MaxBlocks)
				}
				if c.chunkBytes >= 1 && c.chunkBytes <= azureMaxAppendBlockBytes && got.ChunkBytes != c.chunkBytes {
					t.Errorf("ChunkBytes %d became %d", c.chunkBytes, got.ChunkBytes)
				}
			}
		})
	}
}
