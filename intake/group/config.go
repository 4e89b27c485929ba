package group

import (
	"errors"

	"github.com/spf13/pflag"
)

// Config holds the limits on what one request may add, and on the services
// an instance takes on per hour.
type Config struct {
	// MaxEventsPerRequest caps the rows (log events and login attempts,
	// valid or not) of one request: past it the request is refused whole
	// (413).
	MaxEventsPerRequest int
	// MaxServiceHoursPerRequest caps the distinct (service, UTC hour of the
	// event) pairs of one request, each a blob of its own: past it the
	// events of a further service or hour are rejected, one by one.
	MaxServiceHoursPerRequest int
	// MaxNewServicesPerHour caps the services new to this instance (no
	// event of theirs accepted in the current or the previous hour) that
	// it takes on per hour of its clock: past it their events are rejected,
	// one by one, until the next hour. 0: no cap.
	MaxNewServicesPerHour int
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{
		MaxEventsPerRequest:       200_000,
		MaxServiceHoursPerRequest: 1_000,
		MaxNewServicesPerHour:     10_000,
	}
}

// RegisterFlags adds the flags to fs, with c's values as their defaults
// (start from DefaultConfig).
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.MaxEventsPerRequest, "max-events-per-request", c.MaxEventsPerRequest, "events or login attempts one request may carry, valid or not; a request with more is refused whole with 413")
	fs.IntVar(&c.MaxServiceHoursPerRequest, "max-service-hours-per-request", c.MaxServiceHoursPerRequest, "distinct services one request may write, a service counting once per UTC hour of its events (each is a blob); the events of a further service or hour are rejected line by line")
	fs.IntVar(&c.MaxNewServicesPerHour, "max-new-services-per-hour", c.MaxNewServicesPerHour, "services this instance takes on per hour that sent nothing in the current or previous hour; past it their events are rejected line by line until the next hour (0: no cap)")
}

// Validate checks the settings. It changes nothing.
func (c *Config) Validate() error {
	if c.MaxEventsPerRequest < 1 || c.MaxServiceHoursPerRequest < 1 {
		return errors.New("cannot use a --max-events-per-request or --max-service-hours-per-request below 1")
	}
	if c.MaxNewServicesPerHour < 0 {
		return errors.New("cannot use a negative --max-new-services-per-hour")
	}
	return nil
}
