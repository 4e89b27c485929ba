package logline

import (
	"errors"
	"time"
)

// TimeLayout is the line's time format: UTC with seven fractional digits.
const TimeLayout = "2006-01-02T15:04:05.0000000Z"

// timeLen is the length of a formatted time.
const timeLen = len(TimeLayout)

// AppendTime appends t (Unix nanoseconds) in TimeLayout, truncated to 100 ns.
// It does the calendar arithmetic itself because time.AppendFormat costs
// several times more on the per-event path.
func AppendTime(dst []byte, unixNano int64) []byte {
	secs, frac := floorDiv(unixNano, 1e9)
	days, sod := floorDiv(secs, 86400)
	y, m, d := civilFromDays(days)
	if y < 0 || y > 9999 {
		return time.Unix(0, unixNano).UTC().AppendFormat(dst, TimeLayout)
	}
	var b [timeLen]byte
	put4(b[0:], int(y))
	b[4] = '-'
	put2(b[5:], m)
	b[7] = '-'
	put2(b[8:], d)
	b[10] = 'T'
	put2(b[11:], int(sod/3600))
	b[13] = ':'
	put2(b[14:], int(sod/60%60))
	b[16] = ':'
	put2(b[17:], int(sod%60))
	b[19] = '.'
	ticks := frac / 100
	for i := 26; i >= 20; i-- {
		b[i] = byte('0' + ticks%10)
		ticks /= 10
	}
	b[27] = 'Z'
	return append(dst, b[:]...)
}

// AppendTime appends t like the package's AppendTime. When t falls in the
// minute of the previous call it rewrites only the seconds and ticks of the
// remembered stamp.
func (enc *Encoder) AppendTime(dst []byte, unixNano int64) []byte {
	secs, frac := floorDiv(unixNano, 1e9)
	minute, sec := floorDiv(secs, 60)
	if !enc.ok || minute != enc.minute {
		b := AppendTime(enc.stamp[:0], unixNano)
		if len(b) != timeLen { // a year outside 0..9999: not cached
			enc.ok = false
			return append(dst, b...)
		}
		enc.minute, enc.ok = minute, true
		return append(dst, enc.stamp[:]...)
	}
	b := &enc.stamp
	put2(b[17:], int(sec))
	ticks := uint32(frac / 100) // 0..9999999
	b[26] = byte('0' + ticks%10)
	ticks /= 10
	put2(b[24:], int(ticks%100))
	ticks /= 100
	put2(b[22:], int(ticks%100))
	put2(b[20:], int(ticks/100))
	return append(dst, b[:]...)
}

// floorDiv divides a by b > 0 rounding down, so that a time before 1970
// still gets a remainder in [0, b).
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's days_from_civil inverse).
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func put2(b []byte, v int) { b[0] = byte('0' + v/10); b[1] = byte('0' + v%10) }

func put4(b []byte, v int) {
	b[0] = byte('0' + v/1000)
	b[1] = byte('0' + v/100%10)
	b[2] = byte('0' + v/10%10)
	b[3] = byte('0' + v%10)
}

var errTime = errors.New("time is not YYYY-MM-DDThh:mm:ss.fffffffZ")

// ParseTime parses a time in TimeLayout and returns Unix nanoseconds.
func ParseTime(b []byte) (int64, error) {
	if len(b) != timeLen || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' ||
		b[16] != ':' || b[19] != '.' || b[27] != 'Z' {
		return 0, errTime
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	f, ok7 := num(b[20:27])
	// Unix nanoseconds in an int64 span the years 1677..2262.
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || y < 1678 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 {
		return 0, errTime
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, f*100, time.UTC)
	return t.UnixNano(), nil
}

// HourPrefix appends the blob name's hour part, "YYYY/MM/DD/hh00", for t.
func HourPrefix(dst []byte, unixNano int64) []byte {
	var b [timeLen]byte
	ts := AppendTime(b[:0], unixNano)
	dst = append(dst, ts[0:4]...)
	dst = append(dst, '/')
	dst = append(dst, ts[5:7]...)
	dst = append(dst, '/')
	dst = append(dst, ts[8:10]...)
	dst = append(dst, '/')
	dst = append(dst, ts[11:13]...)
	return append(dst, "00"...)
}
