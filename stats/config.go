package stats

import (
	"errors"
	"os"

	"github.com/spf13/pflag"
)

// Config holds the stats settings.
type Config struct {
	// Instance names this instance in each entity it writes (Instance).
	Instance string
}

// DefaultConfig returns the defaults: the host name as instance.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{Instance: host}
}

// RegisterFlags adds the stats flags to fs, with c's values as their
// defaults (start from DefaultConfig).
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Instance, "stats-instance", c.Instance, "this instance's name: written with the event counts of each blob it writes into the stats table, and its entry in the cluster table (default the host name, which a StatefulSet pod keeps across restarts; give each instance its own)")
}

// Validate checks the settings. It changes nothing.
func (c *Config) Validate() error {
	if c.Instance == "" {
		return errors.New("cannot use an empty --stats-instance: name this instance (the host name could not be read)")
	}
	return nil
}
