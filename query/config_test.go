package query

import (
	"testing"

	"ingest/internal/configtest"
)

func TestConfigFlags(t *testing.T) {
	c, fs := configtest.FlagsDefault(t, DefaultConfig)
	// Sizes take a unit; bare byte counts, as before, still work.
	if err := fs.Parse([]string{"--query-sort-bytes", "32MiB", "--query-max-line-bytes", "1048576"}); err != nil {
		t.Fatal(err)
	}
	if c.SortBytes != 32<<20 || c.MaxLineBytes != 1<<20 {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--query-sort-bytes", "lots"}); err == nil {
		t.Fatal("a bad size was accepted")
	}
}
