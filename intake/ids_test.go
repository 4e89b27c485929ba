package intake

import (
	"math/big"
	"testing"

	"github.com/oklog/ulid/v2"
)

func TestIDsAreConsecutiveULIDs(t *testing.T) {
	var g IDs
	g.Reset()
	var ids []ulid.ULID
	for range 2000 {
		text := g.Next(nil, now)
		if len(text) != IDLen {
			t.Fatalf("id %q has %d characters, want %d", text, len(text), IDLen)
		}
		id, err := ulid.ParseStrict(string(text))
		if err != nil {
			t.Fatalf("id %q is not a ULID: %v", text, err)
		}
		ids = append(ids, id)
	}
	if got, want := ids[0].Time(), uint64(now/1e6); got != want {
		t.Fatalf("id time %d ms, want the request time %d ms", got, want)
	}
	// Each id is the previous plus one, as 128-bit numbers.
	one := big.NewInt(1)
	for i := 1; i < len(ids); i++ {
		prev := new(big.Int).SetBytes(ids[i-1][:])
		cur := new(big.Int).SetBytes(ids[i][:])
		if new(big.Int).Sub(cur, prev).Cmp(one) != 0 {
			t.Fatalf("id %d %s does not follow %s", i, ids[i], ids[i-1])
		}
	}
}

func TestIDCarry(t *testing.T) {
	g := IDs{init: true}
	copy(g.text[:], "01JDQ8ZK3M0000000000000ZZZ")
	if got := string(g.Next(nil, now)); got != "01JDQ8ZK3M0000000000001000" {
		t.Fatalf("carry: got %s", got)
	}
	copy(g.text[:], "01JDQ8ZK3MZZZZZZZZZZZZZZZZ")
	if got := string(g.Next(nil, now)); got != "01JDQ8ZK3M0000000000000000" {
		t.Fatalf("wrap: got %s, want the random part to wrap and the time part kept", got)
	}
}

func TestIDsDifferAcrossRequests(t *testing.T) {
	seen := map[string]bool{}
	var g IDs
	for range 100 {
		g.Reset()
		for range 10 {
			id := string(g.Next(nil, now))
			if seen[id] {
				t.Fatalf("id %s handed out twice", id)
			}
			seen[id] = true
		}
	}
}
