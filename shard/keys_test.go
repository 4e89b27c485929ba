package shard

import (
	"bytes"
	"math"
	"sort"
	"testing"
	"time"
)

func TestRowKey(t *testing.T) {
	base := time.Date(2026, 11, 21, 18, 4, 5, 123456700, time.UTC).UnixNano()
	if got, want := string(RowKey(nil, base, []byte("01JDQ8"))), "8584063226403541240_01JDQ8"; got != want {
		t.Fatalf("RowKey = %q, want %q", got, want)
	}
	times := []int64{
		0, 1, 100, base, base + 100, base + 1e9, base - 86400e9,
		math.MinInt64 + 100, math.MaxInt64, // the range of Unix nanoseconds (years 1677..2262)
	}
	var keys []string
	for _, ts := range times {
		rk := RowKey(nil, ts, []byte("id"))
		if len(rk) != RowKeyTimeWidth+3 {
			t.Fatalf("RowKey(%d) = %q: not fixed width", ts, rk)
		}
		got, id, err := ParseRowKey(nil, rk)
		if err != nil || got != ts/100*100 || string(id) != "id" {
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
	for _, in := range []string{"", "123_x", "922337203685477580x_a", "9999999999999999999_a", "8584063226403541240-a", "8584063226403541240_%"} {
		if _, _, err := ParseRowKey(nil, []byte(in)); err == nil {
			t.Errorf("ParseRowKey(%q): want an error", in)
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

func TestSplitPartitionKeyErrors(t *testing.T) {
	for _, in := range []string{"", "001e", "001ealice", "zz1e_alice", "001e_alice~0x", "001e_a%"} {
		if _, _, err := SplitPartitionKey(nil, []byte(in)); err == nil {
			t.Errorf("SplitPartitionKey(%q): want an error", in)
		}
	}
	u, salt, err := SplitPartitionKey(nil, []byte("001e_alice%7E01"))
	if err != nil || salt != -1 || !bytes.Equal(u, []byte("alice~01")) {
		t.Errorf("escaped delimiter: %q, %d, %v", u, salt, err)
	}
}
