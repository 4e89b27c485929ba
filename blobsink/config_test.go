package blobsink

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestConfigFlagsDefaultToDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c != DefaultConfig() {
		t.Fatalf("flags without arguments give %+v, want DefaultConfig %+v", c, DefaultConfig())
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig is not valid: %v", err)
	}
}

func TestConfigValidateOnlyChecks(t *testing.T) {
	f := func(c Config, wantErr bool) {
		t.Helper()
		before := c
		err := c.Validate()
		if (err != nil) != wantErr {
			t.Fatalf("Validate(%+v) = %v, want error %v", before, err, wantErr)
		}
		if c != before {
			t.Fatalf("Validate changed the config: %+v, was %+v", c, before)
		}
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
