package shard

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// BucketWidth is the width of a PartitionKey: the hash bucket in hex.
const BucketWidth = 4

// Count-min sketch dimensions. With 8,192 counters per row the expected
// over-count of a row is total/8,192 per second (12/s at 100,000 attempts/s),
// and the minimum over 4 rows is far smaller: no cold user is taken for hot.
const (
	sketchDepth = 4
	sketchWidth = 1 << 13
)

// window counts one second of attempts per user.
type window [sketchDepth * sketchWidth]atomic.Uint32

// Keyer builds PartitionKeys and decides which users are hot. It is safe for
// concurrent use. Its memory is fixed (two count-min sketches of 128 KiB,
// one for the current second, one for the previous), whatever the number of
// users.
type Keyer struct {
	cfg       Config
	threshold atomic.Uint64 // float64 bits: HotRate over the live instances
	instances atomic.Int64
	sec       atomic.Int64 // the second window[sec&1] counts
	mu        sync.Mutex   // serialises window rotation
	win       [2]window
	salted    atomic.Uint64
}

// NewKeyer returns a Keyer for a validated cfg.
func NewKeyer(cfg Config) *Keyer {
	k := &Keyer{cfg: cfg}
	k.sec.Store(math.MinInt64)
	k.SetInstances(1)
	return k
}

// SetInstances sets the number of live instances sharing Config.HotRate,
// a rate across all of them: this instance salts a user once its own share
// crosses HotRate/n. Whatever way a user's attempts spread over the
// instances, each puts at most about HotRate/n per second of them into the
// user's unsalted bucket before salting, so that bucket takes at most
// about HotRate per second from the whole cluster. n below 1 counts as 1.
func (k *Keyer) SetInstances(n int) {
	n = max(n, 1)
	k.instances.Store(int64(n))
	k.threshold.Store(math.Float64bits(k.cfg.HotRate / float64(n)))
}

// Instances is the number of live instances last set (at least 1).
func (k *Keyer) Instances() int { return int(k.instances.Load()) }

// Threshold is the per-instance rate (attempts/s) above which a user is
// salted now.
func (k *Keyer) Threshold() float64 { return math.Float64frombits(k.threshold.Load()) }

// Config returns the Keyer's settings.
func (k *Keyer) Config() Config { return k.cfg }

// PartitionKey appends the PartitionKey of one attempt to dst, the hash
// bucket of its user, and records the attempt in the user's rate. unixNano
// is the intake (arrival) time: it is the clock of the rate estimate, so
// pass the time the attempt is accepted, not the client's timestamp. A user
// above Threshold gets the bucket of (user, salt), the salt chosen from
// a hash of id, so the decision must be stored with the attempt (the
// caller's write-ahead log keeps the key) for a replay to reuse it.
func (k *Keyer) PartitionKey(dst, user, id []byte, unixNano int64) []byte {
	h := hashUser(user)
	if k.cfg.Salts == 0 {
		return appendBucket(dst, k.bucket(h, -1))
	}
	rate := k.observe(h, unixNano)
	if rate <= k.Threshold() {
		return appendBucket(dst, k.bucket(h, -1))
	}
	var sh uint64
	if len(id) > 0 {
		sh = xxhash.Sum64(id)
	} else {
		sh = mix64(uint64(unixNano))
	}
	salt := int(sh % uint64(k.cfg.Salts))
	k.salted.Add(1)
	return appendBucket(dst, k.bucket(h, salt))
}

// AppendKey appends the PartitionKey of user with the given salt (-1: the
// unsalted key), without touching the rate estimate.
func (k *Keyer) AppendKey(dst, user []byte, salt int) []byte {
	return appendBucket(dst, k.bucket(hashUser(user), salt))
}

// ReadKeys lists every PartitionKey user's attempts can be stored under,
// each once: the unsalted bucket first, then the buckets of the salts not
// already listed (at most Config.Salts+1 keys). Reading the user's latest N
// is one UserRange query with $top=N in each.
func (k *Keyer) ReadKeys(user []byte) []string {
	keys := make([]string, 0, 1+k.cfg.Salts)
	h := hashUser(user)
	var buf [BucketWidth]byte
	for salt := -1; salt < k.cfg.Salts; salt++ {
		pk := string(appendBucket(buf[:0], k.bucket(h, salt)))
		if !slices.Contains(keys, pk) {
			keys = append(keys, pk)
		}
	}
	return keys
}

func hashUser(user []byte) uint64 { return xxhash.Sum64(user) }

// bucket places (user, salt) in one of cfg.Partitions buckets. Each salt
// gets its own, independently mixed bucket, so a hot user's partitions are
// scattered over the key space instead of sitting next to each other.
func (k *Keyer) bucket(h uint64, salt int) int {
	if salt >= 0 {
		h = mix64(h ^ (uint64(salt+1) * 0x9e3779b97f4a7c15))
	}
	return int(h % uint64(k.cfg.Partitions))
}

// appendBucket writes a bucket as 4 lower-case hex digits.
func appendBucket(dst []byte, bucket int) []byte {
	const hex = "0123456789abcdef"
	return append(dst, hex[bucket>>12&15], hex[bucket>>8&15], hex[bucket>>4&15], hex[bucket&15])
}

// ParseBucket returns the bucket number of a PartitionKey made by
// PartitionKey.
func ParseBucket(pk []byte) (int, error) {
	if len(pk) != BucketWidth {
		return 0, ErrBadPartitionKey
	}
	b := 0
	for _, c := range pk {
		v, ok := unhex(c)
		if !ok {
			return 0, ErrBadPartitionKey
		}
		b = b<<4 | int(v)
	}
	return b, nil
}

// ErrBadPartitionKey reports a key not made by PartitionKey.
var ErrBadPartitionKey = errors.New("cannot parse PartitionKey: want 4 hex digits")

// observe counts one attempt of the user hashed to h at unixNano and returns
// the user's estimated rate (attempts/s): this second's count plus the
// previous second's, weighted by the part of the last second the sliding
// window still covers. Times only move the windows forward; an attempt older
// than the current second is counted in it.
func (k *Keyer) observe(h uint64, unixNano int64) float64 {
	sec, rem := unixNano/1e9, unixNano%1e9
	if rem < 0 {
		sec, rem = sec-1, rem+1e9
	}
	frac := float64(rem) / 1e9
	cur := k.sec.Load()
	if sec > cur {
		k.rotate(sec)
		cur = k.sec.Load()
	}
	if sec < cur {
		frac = 1
	}
	w, prev := &k.win[cur&1], &k.win[(cur-1)&1]
	h1, h2 := uint32(h), uint32(h>>32)|1
	c, p := uint32(math.MaxUint32), uint32(math.MaxUint32)
	for row := range uint32(sketchDepth) {
		i := row*sketchWidth + (h1+row*h2)&(sketchWidth-1)
		c = min(c, w[i].Add(1))
		p = min(p, prev[i].Load())
	}
	return float64(c) + float64(p)*(1-frac)
}

// rotate moves the current window to sec, clearing the counters it reuses.
func (k *Keyer) rotate(sec int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cur := k.sec.Load()
	if sec <= cur {
		return
	}
	k.clear(&k.win[sec&1])
	if sec-1 > cur {
		k.clear(&k.win[(sec-1)&1])
	}
	k.sec.Store(sec)
}

func (k *Keyer) clear(w *window) {
	for i := range w {
		w[i].Store(0)
	}
}

// mix64 is the SplitMix64 finaliser: a cheap bijection that makes nearby
// inputs land far apart.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
