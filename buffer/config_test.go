package buffer

import (
	"testing"
	"time"

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
	bad = d
	bad.WALSpareSegments = -1
	f(bad, true)
	none := d
	none.WALSpareSegments = 0
	f(none, false)
}
