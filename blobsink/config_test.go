package blobsink

import (
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

// Azure's limits for append blobs, as documented ("Append Block",
// x-ms-version 2022-11-02 and later; "Scalability and performance targets
// for Blob storage"), written here rather than taken from the package so
// that a wrong constant there fails this test.
const (
	azureMaxAppendBlockBytes = 100 * 1024 * 1024
	azureMaxBlocksPerBlob    = 50_000
)

// TestNewSinkKeepsBlocksWithinAzureLimits: whatever the configuration, the
// sink's blocks and blob lengths stay within Azure's limits.
func TestNewSinkKeepsBlocksWithinAzureLimits(t *testing.T) {
	store, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{MaxBlobBytes: 1 << 20},
		DefaultConfig(),
		{MaxBlobBytes: 1 << 20, MaxBlocks: MaxBlocks + 1, ChunkBytes: MaxAppendBytes + 1},
		{MaxBlobBytes: 1 << 40, MaxBlocks: 1 << 30, ChunkBytes: 1 << 40 >> 8},
		{MaxBlobBytes: 1, MaxBlocks: -1, ChunkBytes: -1},
		{MaxBlobBytes: 1 << 20, MaxBlocks: azureMaxBlocksPerBlob, ChunkBytes: azureMaxAppendBlockBytes},
	} {
		s, err := NewSink(store, c, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.cfg.MaxBlocks <= 0 || s.cfg.MaxBlocks > azureMaxBlocksPerBlob || s.cfg.ChunkBytes <= 0 || s.cfg.ChunkBytes > azureMaxAppendBlockBytes {
			t.Errorf("NewSink(%+v) kept MaxBlocks %d, ChunkBytes %d: want 1..%d blocks of 1..%d bytes",
				c, s.cfg.MaxBlocks, s.cfg.ChunkBytes, azureMaxBlocksPerBlob, azureMaxAppendBlockBytes)
		}
	}
}
