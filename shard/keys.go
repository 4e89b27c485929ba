package shard

import (
	"bytes"
	"errors"
	"math"
	"time"
)

// UnixEpochTicks is 1970-01-01T00:00:00Z in .NET ticks (100 ns units since
// 0001-01-01T00:00:00Z), the clock Azure's log-tail guidance inverts.
const UnixEpochTicks = 621355968000000000

// RowKeyTimeWidth is the width of the inverted ticks in a RowKey: the 19
// digits of math.MaxInt64.
const RowKeyTimeWidth = 19

// UserSep ends the escaped user at the start of a RowKey. EscapeKey always
// escapes it, so the first UserSep of a RowKey is the end of the user.
const UserSep = '~'

// userRangeEnd follows UserSep in a user's range end: it sorts after every
// digit, so [user~, user~:) holds exactly that user's RowKeys.
const userRangeEnd = ':'

// ticks converts Unix nanoseconds to .NET ticks.
func ticks(unixNano int64) int64 { return unixNano/100 + UnixEpochTicks }

// InvertedTicks is math.MaxInt64 minus the ticks of unixNano: larger for
// older times, so an ascending RowKey scan reads newest first.
func InvertedTicks(unixNano int64) int64 { return math.MaxInt64 - ticks(unixNano) }

// RowKey appends the RowKey of an attempt to dst: the escaped user, UserSep,
// the inverted ticks zero padded to 19 digits, '_' and the escaped event id.
// A user's RowKeys are one contiguous range (UserRange) and within it sort
// newest first; the time is fixed width, so the id after it needs no
// delimiter escaping. Two events with the same user, time and id get the
// same RowKey: a retried insert is an idempotent upsert.
func RowKey(dst, user []byte, unixNano int64, id []byte) []byte {
	dst = EscapeKey(dst, user)
	dst = append(dst, UserSep)
	dst = appendPadded(dst, uint64(InvertedTicks(unixNano)), RowKeyTimeWidth)
	dst = append(dst, '_')
	return EscapeKey(dst, id)
}

// UserRange returns the RowKey range [from, to) holding every attempt of
// user, newest first: a $top=N range query inside a partition reads the
// user's latest N.
func UserRange(user []byte) (from, to string) {
	b := append(EscapeKey(nil, user), UserSep, userRangeEnd)
	return string(b[:len(b)-1]), string(b)
}

// ParseRowKey splits a RowKey made by RowKey into the unescaped user, the
// time (Unix nanoseconds, at 100 ns resolution) and the unescaped id.
func ParseRowKey(rk []byte) (user []byte, unixNano int64, id []byte, err error) {
	i := bytes.IndexByte(rk, UserSep)
	if i < 0 {
		return nil, 0, nil, errors.New("cannot parse RowKey: no '~' after the user")
	}
	if user, err = UnescapeKey(nil, rk[:i]); err != nil {
		return nil, 0, nil, err
	}
	unixNano, id, err = parseTimeID(rk[i+1:])
	return user, unixNano, id, err
}

// parseTimeID parses "19 digits of inverted ticks '_' escaped id".
func parseTimeID(b []byte) (unixNano int64, id []byte, err error) {
	if len(b) < RowKeyTimeWidth+1 || b[RowKeyTimeWidth] != '_' {
		return 0, nil, errors.New("cannot parse RowKey: want 19 digits, '_' and the id after the user")
	}
	var inv uint64
	for _, c := range b[:RowKeyTimeWidth] {
		if c < '0' || c > '9' {
			return 0, nil, errors.New("cannot parse RowKey: the time must be 19 digits")
		}
		inv = inv*10 + uint64(c-'0')
	}
	if inv > math.MaxInt64 {
		return 0, nil, errors.New("cannot parse RowKey: the time exceeds MaxInt64")
	}
	ticks := math.MaxInt64 - int64(inv)
	id, err = UnescapeKey(nil, b[RowKeyTimeWidth+1:])
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

// SaltedMarker appends the RowKey of the marker row that says user was
// salted: the escaped user, UserSep and "!salted". It sits in the user's
// unsalted partition and sorts first in UserRange ('!' before the digits), so
// the one range query every read starts with also tells whether the salted
// partitions need reading: a user who was never hot costs one query.
func SaltedMarker(dst, user []byte) []byte {
	dst = EscapeKey(dst, user)
	dst = append(dst, UserSep)
	return append(dst, saltedSuffix...)
}

const saltedSuffix = "!salted"

// IsSaltedMarker reports whether a RowKey is a SaltedMarker.
func IsSaltedMarker(rk string) bool {
	return len(rk) > len(saltedSuffix) && rk[len(rk)-len(saltedSuffix)-1] == UserSep && rk[len(rk)-len(saltedSuffix):] == saltedSuffix
}
