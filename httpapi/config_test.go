package httpapi

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestConfigFlagsDefault(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c := DefaultConfig()
	c.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil || c != DefaultConfig() {
		t.Fatalf("flag defaults %+v differ from DefaultConfig %+v (%v)", c, DefaultConfig(), err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--max-body-bytes", "1MiB", "--max-conns", "5"}); err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyBytes != 1<<20 || c.MaxConns != 5 {
		t.Fatalf("parsed %+v", c)
	}
}
