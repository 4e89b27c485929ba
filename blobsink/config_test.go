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

func TestNewSinkKeepsBlocksWithinAzureLimits(t *testing.T) {
	store, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSink(store, Config{MaxBlobBytes: 1 << 20, MaxBlocks: MaxBlocks + 1, ChunkBytes: MaxAppendBytes + 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultConfig(); s.cfg.MaxBlocks != d.MaxBlocks || s.cfg.ChunkBytes != d.ChunkBytes {
		t.Fatalf("NewSink kept MaxBlocks %d, ChunkBytes %d; want %d, %d", s.cfg.MaxBlocks, s.cfg.ChunkBytes, d.MaxBlocks, d.ChunkBytes)
	}
}
