package shard

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// simResult is the per-partition load of one simulated run.
type simResult struct {
	Events, Seconds int
	HashedMax       int    // most inserts one hashed PartitionKey took in one second
	HashedHottest   string // that key
	NaiveMax        int    // the same for NaiveKey
	Salted          uint64 // attempts given a salted key
	Partitions      int    // distinct hashed keys over the run
}

// simulate replays events login attempts evenly over seconds of simulated
// arrival time: users drawn from a Zipf(1.1) distribution over users users,
// plus one attacked user at attackRate attempts/s. It counts inserts per
// (partition, second) for the hashed keys and for NaiveKey.
func simulate(events, seconds, users int, attackRate float64, cfg Config) simResult {
	k := NewKeyer(cfg)
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, uint64(users-1))
	rate := float64(events) / float64(seconds)
	pAttack := attackRate / rate
	start := int64(1_795_000_000) * 1e9
	res := simResult{Events: events, Seconds: seconds}

	hashed := make(map[uint64]int, 1<<16)
	naive := make(map[uint64]int, 4)
	all := make(map[uint64]struct{}, 1<<20)
	victim := []byte("victim@example.com")
	user := make([]byte, 0, 32)
	var pk, id []byte
	sec := int64(-1)
	for i := range events {
		ts := start + int64(float64(i)*1e9/rate)
		if s := ts / 1e9; s != sec {
			clear(hashed)
			clear(naive)
			sec = s
		}
		u := victim
		if r.Float64() >= pAttack {
			user = append(strconv.AppendUint(append(user[:0], "user"...), zipf.Uint64(), 10), "@example.com"...)
			u = user
		}
		id = strconv.AppendInt(id[:0], int64(i), 36)
		pk = k.PartitionKey(pk[:0], u, id, ts)
		h := xxhash.Sum64(pk)
		all[h] = struct{}{}
		if n := hashed[h] + 1; true {
			hashed[h] = n
			if n > res.HashedMax {
				res.HashedMax, res.HashedHottest = n, string(pk)
			}
		}
		pk = NaiveKey(pk[:0], ts)
		h = xxhash.Sum64(pk)
		n := naive[h] + 1
		naive[h] = n
		res.NaiveMax = max(res.NaiveMax, n)
	}
	res.Salted = k.salted.Load()
	res.Partitions = len(all)
	return res
}

// partitionTarget is Azure's scalability target for one partition.
const partitionTarget = 2000

func TestSimulationNoHotPartition(t *testing.T) {
	// 100,000 attempts/s (80,000/s Zipf-skewed + 20,000/s on one user). The
	// full 10 million (100 s) runs in BenchmarkSimulation and without -short
	// or -race.
	events, seconds := 10_000_000, 100
	if testing.Short() || raceEnabled {
		events, seconds = 1_000_000, 10
	}
	res := simulate(events, seconds, 1_000_000, 20000, DefaultConfig())
	t.Logf("%d attempts over %d s: hottest hashed partition %d/s (%s), hottest naive partition %d/s, target %d/s; %d salted, %d distinct partitions",
		res.Events, res.Seconds, res.HashedMax, res.HashedHottest, res.NaiveMax, partitionTarget, res.Salted, res.Partitions)
	if res.HashedMax >= partitionTarget {
		t.Errorf("hashed keys: hottest partition takes %d inserts/s, over the %d/s target", res.HashedMax, partitionTarget)
	}
	if res.NaiveMax <= partitionTarget {
		t.Errorf("naive keys: hottest partition takes only %d inserts/s: the simulation does not load the table", res.NaiveMax)
	}
}

func BenchmarkSimulation(b *testing.B) {
	b.ReportAllocs()
	var res simResult
	for b.Loop() {
		res = simulate(10_000_000, 100, 1_000_000, 20000, DefaultConfig())
	}
	b.ReportMetric(float64(res.HashedMax), "hashed-max-inserts/s")
	b.ReportMetric(float64(res.NaiveMax), "naive-max-inserts/s")
	b.ReportMetric(float64(res.Salted)/float64(res.Events)*100, "salted-%")
	b.ReportMetric(float64(res.Partitions), "partitions")
}
