package tablesink

import (
	"strconv"
	"strings"
	"time"
)

// TablePrefix starts every day table's name.
const TablePrefix = "logins"

const nsPerDay = 86400 * int64(time.Second)

// dayOf is the UTC day number (days since 1970-01-01) of a Unix time.
func dayOf(unixNano int64) int64 {
	d := unixNano / nsPerDay
	if unixNano%nsPerDay < 0 {
		d--
	}
	return d
}

func dayTime(day int64) time.Time { return time.Unix(day*86400, 0).UTC() }

// tableName is the day table of a UTC day number: prefix{YYYYMMDD}.
func tableName(prefix string, day int64) string {
	return string(appendDay(append(make([]byte, 0, len(prefix)+8), prefix...), day))
}

// TableFor is the day table of an attempt at unixNano.
func TableFor(unixNano int64) string { return tableName(TablePrefix, dayOf(unixNano)) }

func appendDay(dst []byte, day int64) []byte {
	y, m, d := dayTime(day).Date()
	dst = appendInt(dst, y, 4)
	dst = appendInt(dst, int(m), 2)
	return appendInt(dst, d, 2)
}

func appendInt(dst []byte, v, width int) []byte {
	var b [8]byte
	s := strconv.AppendInt(b[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// parseTableName returns the UTC day number of a day table's name.
func parseTableName(prefix, name string) (day int64, ok bool) {
	if len(name) != len(prefix)+8 || !strings.EqualFold(name[:len(prefix)], prefix) {
		return 0, false
	}
	t, err := time.Parse("20060102", name[len(prefix):])
	if err != nil {
		return 0, false
	}
	return t.Unix() / 86400, true
}
