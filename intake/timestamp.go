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

// TimeInRange reports whether t, Unix nanoseconds, is in the years
// 1678..2261 that an event's time may be.
func TimeInRange(t int64) bool { return t >= minTime && t <= maxTime }

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
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, errTimeSyntax
	}
	y := d2(b, 0)*100 + d2(b, 2)
	mo, d := d2(b, 5), d2(b, 8)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, errTimeSyntax
	}
	var h, mi, s, frac, offset int64
	if len(b) > 10 {
		if c := b[10]; c != 'T' && c != 't' && c != ' ' || len(b) < 16 || b[13] != ':' {
			return 0, errTimeSyntax
		}
		h, mi = d2(b, 11), d2(b, 14)
		if h < 0 || h > 23 || mi < 0 || mi > 59 {
			return 0, errTimeSyntax
		}
		i := 16
		if i < len(b) && b[i] == ':' {
			if len(b) < 19 {
				return 0, errTimeSyntax
			}
			if s = d2(b, 17); s < 0 || s > 60 {
				return 0, errTimeSyntax
			}
			i = 19
			if i < len(b) && (b[i] == '.' || b[i] == ',') {
				i++
				start := i
				scale := int64(1e9)
				for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
					if scale > 1 {
						scale /= 10
						frac += int64(b[i]-'0') * scale
					}
				}
				if i == start {
					return 0, errTimeSyntax
				}
			}
		}
		var ok bool
		if offset, ok = zoneOffset(b[i:]); !ok {
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

// d2 returns the two-digit number at b[i:i+2], or a negative number when
// either byte is not a digit. The caller checks the length.
func d2(b []byte, i int) int64 {
	c0, c1 := b[i]-'0', b[i+1]-'0'
	if c0 > 9 || c1 > 9 {
		return -1000
	}
	return int64(c0)*10 + int64(c1)
}

// zoneOffset reads the zone suffix: nothing (UTC), Z, or ±hh:mm, ±hhmm, ±hh.
func zoneOffset(z []byte) (secs int64, ok bool) {
	switch {
	case len(z) == 0:
		return 0, true
	case len(z) == 1:
		return 0, z[0] == 'Z' || z[0] == 'z'
	case z[0] != '+' && z[0] != '-':
		return 0, false
	}
	var oh, om int64
	switch len(z) {
	case 3:
		oh = d2(z, 1)
	case 5:
		oh, om = d2(z, 1), d2(z, 3)
	case 6:
		if z[3] != ':' {
			return 0, false
		}
		oh, om = d2(z, 1), d2(z, 4)
	default:
		return 0, false
	}
	if oh < 0 || oh > 23 || om < 0 || om > 59 {
		return 0, false
	}
	secs = oh*3600 + om*60
	if z[0] == '-' {
		secs = -secs
	}
	return secs, true
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
