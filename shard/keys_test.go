package shard

import (
	"math"
	"sort"
	"testing"
	"time"
)

func TestRowKey(t *testing.T) {
	base := time.Date(2026, 11, 21, 18, 4, 5, 123456700, time.UTC).UnixNano()
	if got, want := string(RowKey(nil, []byte("alice@example.com"), base, []byte("01JDQ8"))), "alice@example.com~8584063226403541240_01JDQ8"; got != want {
		t.Fatalf("RowKey = %q, want %q", got, want)
	}
	if got, want := string(LegacyRowKey(nil, base, []byte("01JDQ8"))), "8584063226403541240_01JDQ8"; got != want {
		t.Fatalf("LegacyRowKey = %q, want %q", got, want)
	}
	times := []int64{
		0, 1, 100, base, base + 100, base + 1e9, base - 86400e9,
		math.MinInt64 + 100, math.MaxInt64, // the range of Unix nanoseconds (years 1677..2262)
	}
	var keys []string
	for _, ts := range times {
		rk := RowKey(nil, []byte("u"), ts, []byte("id"))
		if len(rk) != RowKeyTimeWidth+5 {
			t.Fatalf("RowKey(%d) = %q: not fixed width", ts, rk)
		}
		u, got, id, err := ParseRowKey(rk)
		if err != nil || got != ts/100*100 || string(id) != "id" || string(u) != "u" {
			t.Fatalf("ParseRowKey(%q) = %d, %q, %v; want %d", rk, got, id, err, ts)
		}
		keys = append(keys, string(rk))
	}
	// Sorting the keys ascending must give the times newest first.
	idx := make([]int, len(times))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	for i := 1; i < len(idx); i++ {
		if times[idx[i-1]]/100 < times[idx[i]]/100 {
			t.Fatalf("RowKey order is not newest first: %d before %d", times[idx[i-1]], times[idx[i]])
		}
	}
}

func TestParseRowKeyErrors(t *testing.T) {
	for _, in := range []string{"", "u", "u~123_x", "u~922337203685477580x_a", "u~9999999999999999999_a", "u~8584063226403541240-a", "u~8584063226403541240_%", "%~8584063226403541240_a"} {
		if _, _, _, err := ParseRowKey([]byte(in)); err == nil {
			t.Errorf("ParseRowKey(%q): want an error", in)
		}
	}
	if _, _, err := ParseLegacyRowKey([]byte("123_x")); err == nil {
		t.Error("ParseLegacyRowKey(123_x): want an error")
	}
}

func TestUserRange(t *testing.T) {
	from, to := UserRange([]byte("a/b"))
	if from != "a%2Fb~" || to != "a%2Fb~:" {
		t.Fatalf("UserRange = %q, %q", from, to)
	}
	// Users that are prefixes of each other keep disjoint ranges.
	for _, other := range []string{"a", "a/", "a/bc", "a/b~", "a/b0"} {
		rk := string(RowKey(nil, []byte(other), 0, []byte("x")))
		if rk >= from && rk < to {
			t.Errorf("RowKey %q of %q falls in the range of a/b", rk, other)
		}
	}
}

func TestNaiveKey(t *testing.T) {
	ts := time.Date(2026, 11, 21, 18, 4, 5, 999999999, time.UTC).UnixNano()
	if got := string(NaiveKey(nil, ts)); got != "20261121180405" {
		t.Fatalf("NaiveKey = %q", got)
	}
}

func TestAppendPadded(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		w    int
		want string
	}{{0, 19, "0000000000000000000"}, {42, 4, "0042"}, {math.MaxInt64, 19, "9223372036854775807"}, {12345, 3, "12345"}} {
		if got := string(appendPadded(nil, c.v, c.w)); got != c.want {
			t.Errorf("appendPadded(%d, %d) = %q, want %q", c.v, c.w, got, c.want)
		}
	}
}
