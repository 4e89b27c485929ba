package intake

import (
	"testing"
	"time"
)

func TestParseTimestamp(t *testing.T) {
	f := func(in string, want string) {
		t.Helper()
		got, err := ParseTimestamp([]byte(in))
		if err != nil {
			t.Fatalf("ParseTimestamp(%q): %v", in, err)
		}
		if w := ts(want); got != w {
			t.Fatalf("ParseTimestamp(%q) = %s, want %s", in, time.Unix(0, got).UTC().Format(time.RFC3339Nano), want)
		}
	}
	f("2026-11-21T18:04:05Z", "2026-11-21T18:04:05Z")
	f("2026-11-21T18:04:05.1Z", "2026-11-21T18:04:05.1Z")
	f("2026-11-21T18:04:05.123456789Z", "2026-11-21T18:04:05.123456789Z")
	f("2026-11-21T18:04:05.1234567891234Z", "2026-11-21T18:04:05.123456789Z") // extra digits dropped
	f("2026-11-21t18:04:05z", "2026-11-21T18:04:05Z")
	f("2026-11-21T19:04:05+01:00", "2026-11-21T18:04:05Z")
	f("2026-11-21T17:04:05-0100", "2026-11-21T18:04:05Z")
	f("2026-11-21T23:34:05.5+05:30", "2026-11-21T18:04:05.5Z")
	f("2026-11-21T20:04:05+02", "2026-11-21T18:04:05Z")
	f("2026-11-21 18:04:05", "2026-11-21T18:04:05Z")
	f("2026-11-21 18:04:05,250", "2026-11-21T18:04:05.25Z") // log4j style
	f("2026-11-21T18:04", "2026-11-21T18:04:00Z")
	f("2026-11-21", "2026-11-21T00:00:00Z")
	f("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z")
	f("1969-07-20T20:17:40Z", "1969-07-20T20:17:40Z")
	f("1732212245", "2024-11-21T18:04:05Z")
	f("1732212245.123456", "2024-11-21T18:04:05.123456Z")
	f("1732212245123", "2024-11-21T18:04:05.123Z")
	f("1732212245123.5", "2024-11-21T18:04:05.1235Z")
	f("1732212245123456", "2024-11-21T18:04:05.123456Z")
	f("1732212245123456789", "2024-11-21T18:04:05.123456789Z")
	f("1.732212245e9", "2024-11-21T18:04:05Z")
	f("0", "1970-01-01T00:00:00Z")
	f("-1.5", "1969-12-31T23:59:58.5Z")
}

func TestParseTimestampErrors(t *testing.T) {
	for _, in := range []string{
		"", "yesterday", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2023-02-29", "2026-11-21T24:00:00Z",
		"2026-11-21T18:60:00Z", "2026-11-21T18:04:05.Z", "2026-11-21T18:04:05+1", "2026-11-21T18:04:05 UTC",
		"2026-11-21X18:04:05", "2026-11-21T18", "1e", "1.2.3", "12abc", "--1", ".", "3000-01-01T00:00:00Z",
		"1600-01-01T00:00:00Z", "9999999999", "99999999999999999999", "1e300", "NaN",
	} {
		if got, err := ParseTimestamp([]byte(in)); err == nil {
			t.Errorf("ParseTimestamp(%q) = %d, want an error", in, got)
		}
	}
}

func TestDaysFromCivilMatchesTime(t *testing.T) {
	for _, d := range []time.Time{
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2261, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := daysFromCivil(int64(d.Year()), int64(d.Month()), int64(d.Day())), d.Unix()/86400; got != want {
			t.Errorf("daysFromCivil(%s) = %d, want %d", d.Format(time.DateOnly), got, want)
		}
	}
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2026-11-21T18:04:05.123Z", "2026-11-21 18:04:05+01:00", "1732212245.5", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTimestamp([]byte(s))
		if err != nil {
			return
		}
		if got < minTime || got > maxTime {
			t.Fatalf("ParseTimestamp(%q) = %d, outside the line format's range", s, got)
		}
		// Whatever parses as RFC 3339 with a 'T' and a zone must agree with
		// the standard library.
		if want, err := time.Parse(time.RFC3339Nano, s); err == nil && want.UnixNano() != got {
			t.Fatalf("ParseTimestamp(%q) = %d, time.Parse says %d", s, got, want.UnixNano())
		}
	})
}

// BenchmarkParseTimestamp parses the time stamps the load generator and
// common loggers write: RFC 3339 with seconds, milli-, micro- and 100 ns
// fractions, and epoch milliseconds.
func BenchmarkParseTimestamp(b *testing.B) {
	stamps := [][]byte{
		[]byte("2026-11-25T16:00:32Z"),
		[]byte("2026-11-25T16:00:32.199Z"),
		[]byte("2026-11-25T16:00:32.199610Z"),
		[]byte("2026-11-25T16:00:32.1996104Z"),
		[]byte("2026-11-25T17:00:32.1996104+01:00"),
		[]byte("1795622432199"),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range stamps {
			if _, err := ParseTimestamp(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}
