package query

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 21, 18, 4, 5, 123456789, time.UTC)
	f := func(in string, want time.Time) {
		t.Helper()
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	f("now", now)
	f("NOW", now)
	f("-15m", now.Add(-15*time.Minute))
	f("-2h", now.Add(-2*time.Hour))
	f("-1d", now.Add(-24*time.Hour))
	f("-90s", now.Add(-90*time.Second))
	f("-1w", now.Add(-7*24*time.Hour))
	f("-1h30m", now.Add(-90*time.Minute))
	f("-1.5h", now.Add(-90*time.Minute))
	f("-250ms", now.Add(-250*time.Millisecond))
	f("+1h", now.Add(time.Hour))
	f("now-15m", now.Add(-15*time.Minute))
	f(" -5m ", now.Add(-5*time.Minute))
	f("2026-11-21T16:04:00Z", time.Date(2026, 11, 21, 16, 4, 0, 0, time.UTC))
	f("2026-11-21T17:04:00.5+01:00", time.Date(2026, 11, 21, 16, 4, 0, 5e8, time.UTC))
	f("2026-11-21T16:04:00.1234567Z", time.Date(2026, 11, 21, 16, 4, 0, 123456700, time.UTC))
	f("2026-11-21T16:04:05", time.Date(2026, 11, 21, 16, 4, 5, 0, time.UTC))
	f("2026-11-21T16:04", time.Date(2026, 11, 21, 16, 4, 0, 0, time.UTC))
	f("2026-11-21", time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))

	for _, in := range []string{"", "-", "+", "15m", "-15", "-m", "-15x", "-1..5h", "-1e3h", "yesterday",
		"now-", "2026-13-01", "2026-11-21 16:04", "-99999999999999999999h", "-1h-", "--1h", "-.h"} {
		if _, err := ParseTime(in, now); err == nil || !strings.HasPrefix(err.Error(), "cannot parse") {
			t.Errorf("ParseTime(%q) = %v, want an error", in, err)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "-15m", "-1h30m", "+2d", "now-1w", "2026-11-21T16:04:00Z", "2026-11-21T17:04:00.5+01:00", "2026-11-21", "-0.5s", "-999999h"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 21, 18, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cannot parse") {
				t.Fatalf("error without the usual form: %v", err)
			}
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("ParseTime(%q) not in UTC: %v", s, got)
		}
		// A relative time stays within its 200-year bound and keeps its sign.
		if s = strings.TrimSpace(s); s != "" && (s[0] == '-' || s[0] == '+') {
			d := got.Sub(now)
			if d > 201*365*24*time.Hour || d < -201*365*24*time.Hour || (s[0] == '-' && d > 0) || (s[0] == '+' && d < 0) {
				t.Fatalf("ParseTime(%q) = %v (%v from now)", s, got, d)
			}
		}
	})
}
