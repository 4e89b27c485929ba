package query

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseTime parses a query time bound:
//
//   - RFC 3339, with or without fractional seconds ("2026-11-21T18:04:05Z",
//     "2026-11-21T19:04:05.5+01:00");
//   - the same without a zone, taken as UTC, to the second or minute
//     ("2026-11-21T18:04:05", "2026-11-21T18:04"), or a date alone
//     ("2026-11-21", midnight UTC);
//   - "now";
//   - a duration relative to now: a sign and one or more number-unit pairs,
//     units ms, s, m, h, d (24 h) and w (7 d): "-15m", "-2h", "-1d", "-90s",
//     "-1h30m", "+1h"; "now-15m" is the same as "-15m".
//
// The result is in UTC.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, fmt.Errorf("cannot parse time %q: empty; use RFC 3339, now, or a relative time like -15m", s)
	case strings.EqualFold(s, "now"):
		return now.UTC(), nil
	case s[0] == '-' || s[0] == '+':
		return relative(s, now)
	case len(s) > 3 && strings.EqualFold(s[:3], "now") && (s[3] == '-' || s[3] == '+'):
		return relative(s[3:], now)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse time %q: use RFC 3339 (2026-11-21T18:04:05Z), now, or a relative time like -15m, -2h, -1d", s)
}

// relative parses a signed duration with units up to weeks and adds it to
// now.
func relative(s string, now time.Time) (time.Time, error) {
	bad := func(why string) (time.Time, error) {
		return time.Time{}, fmt.Errorf("cannot parse relative time %q: %s; write it like -15m, -2h, -1d or -1h30m", s, why)
	}
	neg := s[0] == '-'
	rest := s[1:]
	if rest == "" {
		return bad("no duration after the sign")
	}
	var total float64 // nanoseconds; float so overflow is detected, not wrapped
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return bad("expected a number")
		}
		num := rest[:i]
		if strings.Count(num, ".") > 1 || num == "." || len(num) > 20 {
			return bad("malformed number " + num)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return bad("malformed number " + num)
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && (rest[j] >= 'a' && rest[j] <= 'z' || rest[j] >= 'A' && rest[j] <= 'Z') {
			j++
		}
		var unit time.Duration
		switch strings.ToLower(rest[:j]) {
		case "ms":
			unit = time.Millisecond
		case "s":
			unit = time.Second
		case "m":
			unit = time.Minute
		case "h":
			unit = time.Hour
		case "d":
			unit = 24 * time.Hour
		case "w":
			unit = 7 * 24 * time.Hour
		case "":
			return bad("missing unit after " + num + " (ms, s, m, h, d or w)")
		default:
			return bad("unknown unit " + rest[:j] + " (ms, s, m, h, d or w)")
		}
		rest = rest[j:]
		total += v * float64(unit)
	}
	// 200 years either way keeps now +/- d inside time.Time's Unix-ns range.
	const maxRel = 200 * 365.25 * 24 * float64(time.Hour)
	if total > maxRel || math.IsNaN(total) {
		return bad("too far from now")
	}
	d := time.Duration(total)
	if neg {
		d = -d
	}
	return now.Add(d).UTC(), nil
}
