package cluster

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Config holds the membership's timing.
type Config struct {
	// Heartbeat is how often an instance rewrites its entity and lists the
	// others: two storage requests each time.
	Heartbeat time.Duration
	// Expiry is how long an instance may stay silent before the others
	// count it gone; at least twice Heartbeat, so one lost write is not a
	// departure.
	Expiry time.Duration
}

// DefaultConfig returns a heartbeat every 10 s and an expiry of 30 s: three
// heartbeats, 12 requests per instance per minute.
func DefaultConfig() Config {
	return Config{Heartbeat: 10 * time.Second, Expiry: 30 * time.Second}
}

// RegisterFlags adds --cluster-heartbeat and --cluster-expiry to fs, with
// c's values as their defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&c.Heartbeat, "cluster-heartbeat", c.Heartbeat, "how often this instance renews its entry in the cluster table and reads the others' (two storage requests each time; Azure backend only)")
	fs.DurationVar(&c.Expiry, "cluster-expiry", c.Expiry, "an instance whose entry was not renewed for this long is gone (at least twice --cluster-heartbeat)")
}

// Validate checks the durations. It changes nothing.
func (c *Config) Validate() error {
	if c.Heartbeat < 10*time.Millisecond {
		return fmt.Errorf("cannot use --cluster-heartbeat %v: want at least 10ms", c.Heartbeat)
	}
	if c.Expiry < 2*c.Heartbeat {
		return fmt.Errorf("cannot use --cluster-expiry %v: want at least twice --cluster-heartbeat (%v), so one lost heartbeat is not a departure", c.Expiry, c.Heartbeat)
	}
	return nil
}
