package shard

import (
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/spf13/pflag"
)

const t0 = int64(1_795_000_000) * 1e9 // a whole second in 2026

func TestConfig(t *testing.T) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--partitions", "1024", "--hot-user-rate", "500", "--hot-user-salts", "8"}); err != nil {
		t.Fatal(err)
	}
	if c != (Config{Partitions: 1024, HotRate: 500, Salts: 8}) || c.Validate() != nil {
		t.Fatalf("parsed %+v, Validate %v", c, c.Validate())
	}
	for _, bad := range []Config{
		{Partitions: 0, HotRate: 1, Salts: 2},
		{Partitions: 65537, HotRate: 1, Salts: 2},
		{Partitions: 1, HotRate: 0, Salts: 2},
		{Partitions: 1, HotRate: 1, Salts: 1},
		{Partitions: 1, HotRate: 1, Salts: 101},
	} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v): want an error", bad)
		}
	}
	ok := Config{Partitions: 65536, HotRate: 0.5, Salts: 0}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(%+v): %v", ok, err)
	}
}

// feed sends n attempts of user spread evenly over [start, start+seconds)
// and returns the distinct keys and how many were salted.
func feed(k *Keyer, user string, n int, start int64, seconds float64) (keys map[string]int, salted int) {
	keys = map[string]int{}
	step := int64(seconds * 1e9 / float64(n))
	var buf, id []byte
	for i := range n {
		id = strconv.AppendInt(id[:0], int64(i), 10)
		before := k.salted.Load()
		buf = k.PartitionKey(buf[:0], []byte(user), id, start+int64(i)*step)
		keys[string(buf)]++
		if k.salted.Load() > before {
			salted++
		}
	}
	return keys, salted
}

func TestSaltingOnlyForHotUser(t *testing.T) {
	k := NewKeyer(DefaultConfig())
	// A user at 100/s for 5 s stays in one partition.
	keys, salted := feed(k, "bob", 500, t0, 5)
	if len(keys) != 1 || salted != 0 {
		t.Fatalf("cold user: %d keys, %d salted", len(keys), salted)
	}
	// A user at 5,000/s is salted once its rate passes 1,000/s...
	keys, salted = feed(k, "alice@example.com", 25000, t0+5e9, 5)
	if want := len(k.ReadKeys([]byte("alice@example.com"))); len(keys) != want || want < 14 {
		t.Fatalf("hot user: %d keys, want %d (all of ReadKeys)", len(keys), want)
	}
	unsalted := keys[string(k.AppendKey(nil, []byte("alice@example.com"), -1))]
	if unsalted > 1100 || salted != 25000-unsalted {
		t.Fatalf("hot user: %d unsalted, %d salted", unsalted, salted)
	}
	// ...while a cold user at the same time is not,
	keys, salted = feed(k, "carol", 50, t0+5e9, 5)
	if len(keys) != 1 || salted != 0 {
		t.Fatalf("cold user during an attack: %d keys, %d salted", len(keys), salted)
	}
	// and once the attack stops (two seconds later) the user is cold again.
	keys, salted = feed(k, "alice@example.com", 100, t0+12e9, 1)
	if len(keys) != 1 || salted != 0 {
		t.Fatalf("after the attack: %d keys, %d salted", len(keys), salted)
	}
	if k.salted.Load() == 0 {
		t.Fatal("salted() = 0")
	}
}

func TestSaltingDisabled(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Salts = 0
	k := NewKeyer(cfg)
	keys, _ := feed(k, "alice", 20000, t0, 1)
	if len(keys) != 1 || len(k.ReadKeys([]byte("alice"))) != 1 {
		t.Fatalf("salting disabled: %d keys", len(keys))
	}
}

func TestReadKeysCoverPartitionKey(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), {Partitions: 1, HotRate: 10, Salts: 2}, {Partitions: 7, HotRate: 1, Salts: 100}} {
		k := NewKeyer(cfg)
		for _, user := range []string{"alice@example.com", "", "a~01", "x/y#z"} {
			read := k.ReadKeys([]byte(user))
			if len(read) < 1 || len(read) > min(1+cfg.Salts, cfg.Partitions) {
				t.Fatalf("ReadKeys(%q) = %d keys, want 1..%d", user, len(read), min(1+cfg.Salts, cfg.Partitions))
			}
			if read[0] != string(k.AppendKey(nil, []byte(user), -1)) {
				t.Fatalf("ReadKeys(%q)[0] = %q, want the unsalted bucket", user, read[0])
			}
			seen := map[string]bool{}
			for _, r := range read {
				if seen[r] || !ValidKey(r) {
					t.Fatalf("ReadKeys(%q): duplicate or invalid key %q", user, r)
				}
				seen[r] = true
			}
			keys, _ := feed(k, user, 20000, t0, 1)
			for pk := range keys {
				if !slices.Contains(read, pk) {
					t.Fatalf("PartitionKey %q of %q is not in ReadKeys %v", pk, user, read)
				}
			}
		}
	}
}

func TestSaltedBucketsSpread(t *testing.T) {
	k := NewKeyer(DefaultConfig())
	// 17 keys over 256 buckets: a few may share a bucket, most must not.
	if n := len(k.ReadKeys([]byte("alice@example.com"))); n < 14 {
		t.Fatalf("salted keys use only %d distinct buckets: %v", n, k.ReadKeys([]byte("alice@example.com")))
	}
}

func TestPartitionKeyFormat(t *testing.T) {
	k := NewKeyer(DefaultConfig())
	pk := k.PartitionKey(nil, []byte("alice@example.com"), []byte("01JDQ8"), t0)
	if string(pk) != "001e" {
		t.Fatalf("PartitionKey = %q", pk)
	}
	if got := string(k.AppendKey(nil, []byte("alice@example.com"), 1)); got != "00b5" {
		t.Fatalf("salt 1 key = %q", got)
	}
	if b, err := ParseBucket(pk); err != nil || b != 0x1e {
		t.Fatalf("ParseBucket(%q) = %d, %v", pk, b, err)
	}
	for _, bad := range []string{"", "001", "001e_", "zz1e"} {
		if _, err := ParseBucket([]byte(bad)); err == nil {
			t.Errorf("ParseBucket(%q): want an error", bad)
		}
	}
	cfg := DefaultConfig()
	cfg.Partitions = 1 << 16
	if pk := NewKeyer(cfg).AppendKey(nil, []byte("x"), 99); len(pk) != BucketWidth {
		t.Fatalf("bucket key %q is not %d hex digits", pk, BucketWidth)
	}
}

func TestPartitionKeyConcurrent(t *testing.T) {
	k := NewKeyer(DefaultConfig())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var buf []byte
			for i := range 20000 {
				buf = k.PartitionKey(buf[:0], []byte("hot"), strconv.AppendInt(nil, int64(g*1e6+i), 10), t0+int64(i)*25_000)
			}
		})
	}
	wg.Wait()
	// 80,000 attempts in 0.5 s: all but the first ~1,000 are salted.
	if s := k.salted.Load(); s < 78000 {
		t.Fatalf("salted() = %d of 80000", s)
	}
}

func TestPartitionKeyAllocs(t *testing.T) {
	k := NewKeyer(DefaultConfig())
	buf := make([]byte, 0, 128)
	user, id := []byte("alice@example.com"), []byte("01JDQ8")
	n := testing.AllocsPerRun(1000, func() {
		buf = k.PartitionKey(buf[:0], user, id, t0)
		buf = RowKey(buf[:0], user, t0, id)
	})
	if n != 0 {
		t.Fatalf("PartitionKey+RowKey allocate %v times per call", n)
	}
}

func BenchmarkPartitionKey(b *testing.B) {
	k := NewKeyer(DefaultConfig())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 128)
		user := []byte("user0000000@example.com")
		var i int64
		for pb.Next() {
			i++
			user = strconv.AppendInt(user[:4], i%100000, 10)
			buf = k.PartitionKey(buf[:0], user, user, t0+i*1000)
			buf = RowKey(buf, user, t0+i*1000, user)
		}
	})
}

// TestClusterRate: --hot-user-rate is a rate across the instances. One
// user at 2,700/s spread over 6 instances (450/s each, under the default
// 500) is salted once each instance knows there are 6, and the unsalted
// bucket then takes at most about HotRate a second from all of them,
// whatever the spread.
func TestClusterRate(t *testing.T) {
	const user = "victim@example.com"
	f := func(name string, shares []float64, instances int, wantHomeMax int) {
		t.Helper()
		keyers := make([]*Keyer, len(shares))
		for i := range keyers {
			keyers[i] = NewKeyer(DefaultConfig())
			keyers[i].SetInstances(instances)
		}
		home := string(keyers[0].AppendKey(nil, []byte(user), -1))
		// Each instance takes its share of 2,700/s for 5 s; the attempts
		// of one second are counted per bucket over all instances.
		perSecond := map[int64]int{}
		for i, k := range keyers {
			n := int(shares[i] * 2700 * 5)
			if n == 0 {
				continue
			}
			step := int64(5e9) / int64(n)
			var buf, id []byte
			for j := range n {
				id = strconv.AppendInt(append(id[:0], byte('a'+i)), int64(j), 10)
				ts := t0 + int64(j)*step
				if buf = k.PartitionKey(buf[:0], []byte(user), id, ts); string(buf) == home {
					perSecond[ts/1e9]++
				}
			}
		}
		homeMax := 0
		for _, n := range perSecond {
			homeMax = max(homeMax, n)
		}
		if homeMax > wantHomeMax {
			t.Errorf("%s: the unsalted bucket took %d attempts in its busiest second, want at most %d", name, homeMax, wantHomeMax)
		}
		t.Logf("%s: unsalted bucket's busiest second %d attempts", name, homeMax)
	}
	even := []float64{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6}
	f("even over 6, each knowing 6", even, 6, 550)
	f("70/10/5/5/5/5 over 6", []float64{0.7, 0.1, 0.05, 0.05, 0.05, 0.05}, 6, 550)
	f("all on one of 6", []float64{1, 0, 0, 0, 0, 0}, 6, 550)
	// Each instance judging alone never salts: the whole attack in one bucket.
	keyers := NewKeyer(DefaultConfig())
	if keyers.Threshold() != 500 {
		t.Fatalf("alone: threshold %g, want 500", keyers.Threshold())
	}
	keyers.SetInstances(0)
	if keyers.Threshold() != 500 {
		t.Fatalf("SetInstances(0): threshold %g, want 500", keyers.Threshold())
	}
}
