package buffer

import (
	"testing"
	"time"

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
	d := DefaultConfig()
	f(d, false)
	zero := d
	zero.WALSegmentBytes, zero.AckTimeout, zero.WALMaxBytes = 0, 0, 0 // stand for the defaults
	f(zero, false)
	bad := d
	bad.Ack = "later"
	f(bad, true)
	bad = d
	bad.AckTimeout = -time.Second
	f(bad, true)
	bad = d
	bad.WALMaxBytes = d.WALSegmentBytes
	f(bad, true)
}
