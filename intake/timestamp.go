package intake

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// The span of event times a line can carry: logline.ParseTime reads the
// years 1678..2261, the whole years inside int64 Unix nanoseconds.
var (
	minTime = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	maxTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() - 1
)

var (
	errTimeSyntax = errors.New("is neither RFC 3339 (2006-01-02T15:04:05.999Z07:00) nor Unix time")
	errTimeRange  = errors.New("is outside the years 1678..2261")
)

// ParseTimestamp parses an event time: RFC 3339 with any fractional
// precision, 'Z' or an offset ("+01:00", "+0100", "+01"), 'T' or a space
// between date and time, no zone meaning UTC; a date alone; or Unix time as
// decimal text (see ParseEpoch). It returns Unix nanoseconds.
func ParseTimestamp(b []byte) (int64, error) {
	if len(b) >= 10 && b[4] == '-' {
		return parseRFC3339(b)
	}
	return ParseEpoch(b)
}

// ParseEpoch parses a decimal Unix time, deciding the unit by magnitude:
// below 1e10 seconds, below 1e13 milliseconds, below 1e16 microseconds,
// else nanoseconds. A fraction is kept to the nanosecond (Fluent Bit sends
// seconds as 1732212245.123456); an exponent is accepted too.
func ParseEpoch(b []byte) (int64, error) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var ip uint64
	intStart := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if ip > (math.MaxInt64-9)/10 {
			return 0, errTimeRange
		}
		ip = ip*10 + uint64(b[i]-'0')
	}
	intDigits := i - intStart
	var frac, fracScale uint64 = 0, 1
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if fracDigits < 9 {
				frac = frac*10 + uint64(b[i]-'0')
				fracScale *= 10
			}
			fracDigits++
		}
	}
	if intDigits+fracDigits == 0 {
		return 0, errTimeSyntax
	}
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' {
			return 0, errTimeSyntax
		}
		return epochFloat(b)
	}
	var unit uint64
	switch {
	case ip < 1e10:
		unit = 1e9
	case ip < 1e13:
		unit = 1e6
	case ip < 1e16:
		unit = 1e3
	default:
		unit = 1
	}
	if ip > math.MaxInt64/unit {
		return 0, errTimeRange
	}
	ns := ip*unit + frac*unit/fracScale
	if ns > math.MaxInt64 {
		return 0, errTimeRange
	}
	t := int64(ns)
	if neg {
		t = -t
	}
	if t < minTime || t > maxTime {
		return 0, errTimeRange
	}
	return t, nil
}

// epochFloat handles the rare exponent form (1.7322e9) through float64,
// which is exact to well under a microsecond for seconds.
func epochFloat(b []byte) (int64, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errTimeSyntax
	}
	a := math.Abs(f)
	switch {
	case a < 1e10:
		f *= 1e9
	case a < 1e13:
		f *= 1e6
	case a < 1e16:
		f *= 1e3
	}
	if f < float64(minTime) || f > float64(maxTime) {
		return 0, errTimeRange
	}
	return int64(f), nil
}

// parseRFC3339 parses YYYY-MM-DD[(T|t| )hh:mm[:ss[(.|,)fff...]]][Z|z|±hh[:]mm|±hh].
// It does the calendar arithmetic itself: time.Parse allocates on errors
// and costs several times more on the per-event path.
func parseRFC3339(b []byte) (int64, error) {
	num := func(s []byte) (int64, bool) {
		var n int64
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, errTimeSyntax
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	if !(ok1 && ok2 && ok3) || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, errTimeSyntax
	}
	var h, mi, s, frac, offset int64
	rest := b[10:]
	if len(rest) > 0 {
		if c := rest[0]; c != 'T' && c != 't' && c != ' ' || len(rest) < 6 || rest[3] != ':' {
			return 0, errTimeSyntax
		}
		var okh, okm bool
		h, okh = num(rest[1:3])
		mi, okm = num(rest[4:6])
		if !okh || !okm || h > 23 || mi > 59 {
			return 0, errTimeSyntax
		}
		rest = rest[6:]
		if len(rest) > 0 && rest[0] == ':' {
			var oks bool
			if len(rest) < 3 {
				return 0, errTimeSyntax
			}
			if s, oks = num(rest[1:3]); !oks || s > 60 {
				return 0, errTimeSyntax
			}
			rest = rest[3:]
			if len(rest) > 0 && (rest[0] == '.' || rest[0] == ',') {
				i := 1
				scale := int64(1e9)
				for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
					if scale > 1 {
						scale /= 10
						frac += int64(rest[i]-'0') * scale
					}
				}
				if i == 1 {
					return 0, errTimeSyntax
				}
				rest = rest[i:]
			}
		}
		switch {
		case len(rest) == 0:
		case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		case rest[0] == '+' || rest[0] == '-':
			z := rest[1:]
			var oh, om int64
			var okh, okm bool = false, true
			switch {
			case len(z) == 2:
				oh, okh = num(z)
			case len(z) == 4:
				oh, okh = num(z[:2])
				om, okm = num(z[2:])
			case len(z) == 5 && z[2] == ':':
				oh, okh = num(z[:2])
				om, okm = num(z[3:])
			}
			if !okh || !okm || oh > 23 || om > 59 {
				return 0, errTimeSyntax
			}
			offset = oh*3600 + om*60
			if rest[0] == '-' {
				offset = -offset
			}
		default:
			return 0, errTimeSyntax
		}
	}
	secs := daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + s - offset
	if secs < minTime/1e9-1 || secs > maxTime/1e9+1 {
		return 0, errTimeRange
	}
	t := secs*1e9 + frac
	if t < minTime || t > maxTime {
		return 0, errTimeRange
	}
	return t, nil
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
