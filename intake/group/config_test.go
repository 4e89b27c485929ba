package group

import (
	"testing"

	"ingest/internal/configtest"
)

func TestConfigFlagsDefault(t *testing.T) {
	c, fs := configtest.FlagsDefault(t, DefaultConfig)
	if err := fs.Parse([]string{"--max-events-per-request", "5", "--max-service-hours-per-request", "2", "--max-new-services-per-hour", "0"}); err != nil {
		t.Fatal(err)
	}
	if c.MaxEventsPerRequest != 5 || c.MaxServiceHoursPerRequest != 2 || c.MaxNewServicesPerHour != 0 {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Config{{MaxEventsPerRequest: 0, MaxServiceHoursPerRequest: 1}, {MaxEventsPerRequest: 1, MaxServiceHoursPerRequest: 0}, {MaxEventsPerRequest: 1, MaxServiceHoursPerRequest: 1, MaxNewServicesPerHour: -1}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", bad)
		}
	}
}
