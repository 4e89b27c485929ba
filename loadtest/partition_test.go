package loadtest

import (
	"testing"
)

// feed replays n attempts per second for secs seconds, users cycling
// through a few names with one hot user taking half the attempts.
func feed(secs, perSec int) func(func(*attempt)) {
	return func(fn func(*attempt)) {
		var at attempt
		users := []string{"alice", "bob", "carol", "dave"}
		base := int64(1_767_225_600) * 1e9
		for s := range secs {
			for i := range perSec {
				u := "hot"
				if i%2 == 1 {
					u = users[i/2%len(users)]
				}
				at.user = append(at.user[:0], u...)
				at.id = appendPadded(at.id[:0], uint64(s*perSec+i), 8)
				at.unixNano = base + int64(s)*1e9 + int64(i)*1e9/int64(perSec)
				fn(&at)
			}
		}
	}
}

func TestPartitionReport(t *testing.T) {
	const secs, perSec = 10, 3000
	byUser := func(dst, user, id []byte, unixNano int64, _ int) []byte { return append(dst, user...) }
	// Salting the hot user over 4 partitions by its id (the hot user's
	// ids are the even ones).
	salted := func(dst, user, id []byte, unixNano int64, _ int) []byte {
		dst = append(dst, user...)
		if string(user) == "hot" {
			n := int(id[len(id)-3]-'0')*100 + int(id[len(id)-2]-'0')*10 + int(id[len(id)-1]-'0')
			dst = append(dst, '_', byte('0'+n/2%4))
		}
		return dst
	}
	pr := partitionReport([]Scheme{
		{Name: "user", Key: byUser},
		{Name: "salted", Key: salted},
		{Name: "naive", Key: naiveKey},
	}, secs, feed(secs, perSec))
	if pr.Attempts != secs*perSec || pr.Target != AzurePartitionTarget {
		t.Fatalf("attempts %d target %g", pr.Attempts, pr.Target)
	}
	f := func(s SchemeReport, parts int, hottest, peak float64, key string) {
		t.Helper()
		if s.Partitions != parts || s.HottestRate != hottest || s.HottestPeak != peak || s.PeakRate != peak || s.HottestKey != key {
			t.Errorf("%s: partitions %d hottest %g/s peak %g/s key %q; want %d %g %g %q",
				s.Name, s.Partitions, s.HottestRate, s.PeakRate, s.HottestKey, parts, hottest, peak, key)
		}
		if want := float64(secs*perSec) / float64(parts) / secs; s.MeanRate != want {
			t.Errorf("%s: mean %g, want %g", s.Name, s.MeanRate, want)
		}
		if s.PeakVsTarget != s.PeakRate/AzurePartitionTarget {
			t.Errorf("%s: peak vs target %g", s.Name, s.PeakVsTarget)
		}
		if len(s.Top) == 0 || s.Top[0].Key != key || len(s.Ranked) != min(parts, rankedPoints) || s.Ranked[0] < s.Ranked[len(s.Ranked)-1] {
			t.Errorf("%s: top %v ranked %v", s.Name, s.Top, s.Ranked)
		}
	}
	// The hot user takes 1500/s in one partition; salted, 375/s in each of 4.
	f(pr.Schemes[0], 5, 1500, 1500, "hot")
	f(pr.Schemes[1], 8, 375, 375, "alice") // all tied: the first key
	// Naive: every second is its own partition and takes everything.
	f(pr.Schemes[2], secs, perSec/float64(secs), perSec, "20260101000000")
}

// TestPartitionPeakOutOfOrder: attempts arriving slightly out of time
// order (concurrent batches) still land in the right second.
func TestPartitionPeakOutOfOrder(t *testing.T) {
	one := func(dst, user, id []byte, unixNano int64, _ int) []byte { return append(dst, 'p') }
	base := int64(100) * 1e9
	times := []int64{base, base + 1e9, base + 5e8, base + 1e9 + 1, base + 2e9, base + 1e9 + 2}
	pr := partitionReport([]Scheme{{Name: "one", Key: one}}, 3, func(fn func(*attempt)) {
		for _, ts := range times {
			fn(&attempt{user: []byte("u"), id: []byte("i"), unixNano: ts})
		}
	})
	if s := pr.Schemes[0]; s.PeakRate != 3 || s.Partitions != 1 {
		t.Errorf("peak %g partitions %d, want 3 in second 101, 1 partition", s.PeakRate, s.Partitions)
	}
}

func TestDefaultSchemes(t *testing.T) {
	schemes := defaultSchemes(0, 0, 1)
	if len(schemes) != 2 {
		t.Fatalf("%d schemes", len(schemes))
	}
	for _, s := range schemes {
		a := s.Key(nil, []byte("alice"), []byte("lt1-m000000000001"), 1_767_225_600_123_456_789, 0)
		b := s.Key(nil, []byte("alice"), []byte("lt1-m000000000001"), 1_767_225_600_123_456_789, 0)
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: key %q then %q: want a stable non-empty key", s.Name, a, b)
		}
	}
	if k := string(schemes[1].Key(nil, []byte("bob"), nil, 1_767_225_600_999_999_999, 0)); k != "20260101000000" {
		t.Errorf("naive key %q, want the second", k)
	}
}

// TestHashedSchemeSaltsAttack: under the shard package's keys an attack
// far above the hot-user rate is spread below the partition target, while
// the naive key concentrates each second in one partition.
func TestHashedSchemeSaltsAttack(t *testing.T) {
	const secs, rate = 5, 8000
	pr := partitionReport(defaultSchemes(0, 0, 1), secs, attack(secs, rate, 1))
	hashed, naive := pr.Schemes[0], pr.Schemes[1]
	if hashed.Partitions < 2 || hashed.PeakRate >= rate/2 {
		t.Errorf("hashed: %d partitions, busiest second %g: the attack was not salted", hashed.Partitions, hashed.PeakRate)
	}
	if naive.Partitions != secs || naive.PeakRate != rate {
		t.Errorf("naive: %d partitions, busiest second %g; want %d and %d", naive.Partitions, naive.PeakRate, secs, rate)
	}
}

// attack feeds one user's attempts at rate per second for secs seconds,
// spread in turn over replicas instances.
func attack(secs, rate, replicas int) func(func(*attempt)) {
	return func(fn func(*attempt)) {
		var at attempt
		base := int64(1_767_225_600) * 1e9
		for i := range secs * rate {
			at.user = append(at.user[:0], "victim"...)
			at.id = appendPadded(at.id[:0], uint64(i), 12)
			at.unixNano = base + int64(i)*1e9/int64(rate)
			at.replica = i % replicas
			fn(&at)
		}
	}
}
