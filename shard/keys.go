package shard

import (
	"errors"
	"math"
	"time"
)

// UnixEpochTicks is 1970-01-01T00:00:00Z in .NET ticks (100 ns units since
// 0001-01-01T00:00:00Z), the clock Azure's log-tail guidance inverts.
const UnixEpochTicks = 621355968000000000

// RowKeyTimeWidth is the width of the inverted-ticks prefix of a RowKey:
// the 19 digits of math.MaxInt64.
const RowKeyTimeWidth = 19

// Ticks converts Unix nanoseconds to .NET ticks.
func Ticks(unixNano int64) int64 { return unixNano/100 + UnixEpochTicks }

// InvertedTicks is math.MaxInt64 minus the ticks of unixNano: larger for
// older times, so an ascending RowKey scan reads newest first.
func InvertedTicks(unixNano int64) int64 { return math.MaxInt64 - Ticks(unixNano) }

// RowKey appends the RowKey of an attempt to dst: the inverted ticks zero
// padded to 19 digits, '_', and the escaped event id. The prefix is fixed
// width, so RowKeys sort newest first as strings, and the id after it needs
// no delimiter escaping (the first '_' after 19 digits ends the time). Two
// events with the same time and id get the same RowKey: a retried insert is
// an idempotent upsert.
func RowKey(dst []byte, unixNano int64, id []byte) []byte {
	dst = appendPadded(dst, uint64(InvertedTicks(unixNano)), RowKeyTimeWidth)
	dst = append(dst, '_')
	return EscapeKey(dst, id)
}

// ParseRowKey splits a RowKey made by RowKey into the time (Unix
// nanoseconds, at 100 ns resolution) and the unescaped id appended to idDst.
func ParseRowKey(idDst []byte, rk []byte) (unixNano int64, id []byte, err error) {
	if len(rk) < RowKeyTimeWidth+1 || rk[RowKeyTimeWidth] != '_' {
		return 0, idDst, errors.New("cannot parse RowKey: want 19 digits, '_' and the id")
	}
	var inv uint64
	for _, c := range rk[:RowKeyTimeWidth] {
		if c < '0' || c > '9' {
			return 0, idDst, errors.New("cannot parse RowKey: the time prefix must be 19 digits")
		}
		inv = inv*10 + uint64(c-'0')
	}
	if inv > math.MaxInt64 {
		return 0, idDst, errors.New("cannot parse RowKey: the time prefix exceeds MaxInt64")
	}
	ticks := math.MaxInt64 - int64(inv)
	id, err = UnescapeKey(idDst, rk[RowKeyTimeWidth+1:])
	return (ticks - UnixEpochTicks) * 100, id, err
}

// NaiveKey appends the time truncated to the second (YYYYMMDDhhmmss, UTC):
// the prepend/append anti-pattern, where every insert of one second lands in
// one partition. It exists only so simulations and the load generator can
// show what the hashed keys avoid; never store data under it.
func NaiveKey(dst []byte, unixNano int64) []byte {
	return time.Unix(0, unixNano).UTC().AppendFormat(dst, "20060102150405")
}

// appendPadded appends v in decimal, left-padded with zeros to width digits.
func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || i > len(buf)-width {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[i:]...)
}
