package httpapi

import (
	"testing"

	"ingest/internal/configtest"
)

func TestConfigFlagsDefault(t *testing.T) {
	c, fs := configtest.FlagsDefault(t, DefaultConfig)
	if err := fs.Parse([]string{"--max-body-bytes", "1MiB", "--max-conns", "5"}); err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyBytes != 1<<20 || c.MaxConns != 5 {
		t.Fatalf("parsed %+v", c)
	}
}
