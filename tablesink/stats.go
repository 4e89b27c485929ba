package tablesink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ingest/buffer"
	"ingest/internal/retry"
	"ingest/logline"
	"ingest/shard"
)

// numLevels counts logline levels, LevelNone included.
const numLevels = int(logline.LevelFatal) + 1

// maxServices bounds the services counted separately; further ones are
// counted under OtherService so that clients cannot grow memory without end.
const maxServices = 10000

// OtherService collects the counts of services beyond the first 10,000.
const OtherService = "_other"

// hourProps[h] is "Hhh" and levelProps[h][l] "Hhh_<level>" ("Hhh_none" for
// events without a level): the data series' property names.
var hourProps, levelProps = func() (h [24]string, l [24][numLevels]string) {
	for i := range 24 {
		h[i] = fmt.Sprintf("H%02d", i)
		for lv := range numLevels {
			name := logline.Level(lv).String()
			if name == "" {
				name = "none"
			}
			l[i][lv] = h[i] + "_" + name
		}
	}
	return
}()

// Counters counts events per service, UTC hour and level, and merges the
// counts into table "stats" with the data-series pattern: one entity per
// service, day and instance (PartitionKey escaped service "~" YYYYMMDD,
// RowKey the escaped instance name) holding H00..H23 (all levels) and
// H00_info..H23_fatal, read with one range query and updated by merge under
// the entity's ETag. Each instance writes only its own entity, so instances
// never conflict; the ETag still protects a restarted instance against its
// predecessor's last flush.
//
// Each delta is applied exactly once even when the answer to a write is
// lost (a timeout, or the SDK resending a write that landed and getting 412
// or 409): every write also sets property Seq to a sequence unique to the
// delta (this process's random run id and a counter), and after an uncertain
// outcome the entity is read again: carrying our Seq means our write landed.
// A delta whose outcome is still unknown when merge gives up stays pending
// with its Seq and is resolved by the next Flush before anything else is
// written to that entity.
// This relies on one process writing the entity: if another one (a
// predecessor still running) writes in between, our Seq is gone and a landed
// delta whose answer was lost is merged again.
//
// Add is for the intake hot path: no allocation once a service and hour have
// been seen, a read lock and atomic increments.
type Counters struct {
	store    Store
	instance string
	now      func() time.Time
	log      *slog.Logger

	mu   sync.RWMutex
	svcs map[string]*svcCounters

	flushMu   sync.Mutex
	run       string                     // random per Counters: this process's part of Seq
	seq       uint64                     // the last Seq counter used; under flushMu
	pending   map[seriesKey]pendingDelta // written, outcome unknown; under flushMu
	conflicts prometheus.Counter
	failures  prometheus.Counter
	retry     retry.Policy // transient errors of a merge
}

// seqProp is the property holding the Seq of the last delta merged into a
// stats entity.
const seqProp = "Seq"

// pendingDelta is a delta written under seq whose outcome is unknown.
type pendingDelta struct {
	seq   string
	delta map[string]int64
}

type svcCounters struct {
	name  string
	last  atomic.Pointer[hourCounts] // the hour most recently added to: the fast path
	mu    sync.Mutex
	hours map[int64]*hourCounts
}

type hourCounts struct {
	hour int64 // hours since 1970-01-01 UTC
	n    [numLevels]atomic.Int64
}

// NewCounters returns Counters writing as instance to store. Metrics are
// registered on reg (nil: not registered); log may be nil.
func NewCounters(store Store, instance string, reg prometheus.Registerer, log *slog.Logger) (*Counters, error) {
	if instance == "" {
		return nil, errors.New("cannot count events without an instance name: set --stats-instance")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Counters{
		store: store, instance: string(shard.EscapeKey(nil, []byte(instance))), now: time.Now, log: log,
		svcs: map[string]*svcCounters{}, run: newRunID(), pending: map[seriesKey]pendingDelta{},
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_stats_merge_conflicts_total", Help: "Stats merges retried because the entity's ETag had changed.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_stats_flush_failures_total", Help: "Stats flushes that failed (the counts are kept for the next flush).",
		}),
	}
	c.retry = retry.Policy{Op: "merge_stats", Min: 100 * time.Millisecond, Max: 5 * time.Second, Log: log, Metrics: retry.NewMetrics(reg)}
	if reg != nil {
		for _, m := range []prometheus.Collector{c.conflicts, c.failures} {
			if err := reg.Register(m); err != nil {
				return nil, fmt.Errorf("cannot register stats metrics: %w", err)
			}
		}
	}
	return c, nil
}

// newRunID returns 16 random hex digits: Seqs of different processes never
// collide, so a successor never takes its predecessor's write for its own.
func newRunID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Add counts n events of service at unixNano with level.
func (c *Counters) Add(service []byte, unixNano int64, level logline.Level, n int) {
	hour := unixNano / int64(time.Hour)
	if unixNano%int64(time.Hour) < 0 {
		hour--
	}
	c.add(service, hour, level, n)
}

// Observe counts a group of the logs stream (buffer.Observer): its key is
// "{service}/YYYY/MM/DD/hh00" and its Tally counts its events per
// logline.Level. A key of another shape is not counted.
func (c *Counters) Observe(g *buffer.Group) {
	service, hour, ok := splitLogKey(g.Key)
	if !ok {
		return
	}
	for l, n := range g.Tally {
		if n > 0 {
			c.add(service, hour, logline.Level(l), n)
		}
	}
}

// splitLogKey splits a logs group's key into its service and its hour,
// counted from 1970-01-01 UTC.
func splitLogKey(key []byte) (service []byte, hour int64, ok bool) {
	const prefixLen = len("/YYYY/MM/DD/hh00")
	if len(key) <= prefixLen {
		return nil, 0, false
	}
	service, p := key[:len(key)-prefixLen], key[len(key)-prefixLen:]
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				ok = false
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	ok = p[0] == '/' && p[5] == '/' && p[8] == '/' && p[11] == '/' && string(p[14:]) == "00"
	t := time.Date(num(p[1:5]), time.Month(num(p[6:8])), num(p[9:11]), num(p[12:14]), 0, 0, 0, time.UTC)
	return service, t.Unix() / 3600, ok
}

// add counts n events of service in hour with level.
func (c *Counters) add(service []byte, hour int64, level logline.Level, n int) {
	if int(level) >= numLevels {
		level = logline.LevelNone
	}
	c.mu.RLock()
	sc := c.svcs[string(service)] // no allocation: the compiler converts in place for a lookup
	c.mu.RUnlock()
	if sc == nil {
		sc = c.service(service)
	}
	hc := sc.last.Load()
	if hc == nil || hc.hour != hour {
		hc = sc.bucket(hour)
	}
	hc.n[level].Add(int64(n))
}

func (c *Counters) service(name []byte) *svcCounters {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc := c.svcs[string(name)]; sc != nil {
		return sc
	}
	key := string(name)
	if len(c.svcs) >= maxServices {
		if sc := c.svcs[OtherService]; sc != nil {
			return sc
		}
		key = OtherService
	}
	sc := &svcCounters{name: key, hours: map[int64]*hourCounts{}}
	c.svcs[key] = sc
	return sc
}

func (sc *svcCounters) bucket(hour int64) *hourCounts {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	hc := sc.hours[hour]
	if hc == nil {
		hc = &hourCounts{hour: hour}
		sc.hours[hour] = hc
	}
	sc.last.Store(hc)
	return hc
}

// statsKey names one stats entity's partition: escaped service "~" YYYYMMDD.
func statsKey(service string, day int64) string {
	b := shard.EscapeKey(make([]byte, 0, len(service)+9), []byte(service))
	b = append(b, shard.UserSep)
	return string(appendDay(b, day))
}

type seriesKey struct {
	service string
	day     int64
}

// Flush merges the counts gathered since the last flush into the stats
// table. On failure the counts are kept for the next Flush: put back when
// nothing was written, else pending until the entity tells whether the write
// landed.
func (c *Counters) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	deltas := c.drain()
	var errs []error
	for k, p := range c.pending {
		landed, err := c.landed(ctx, statsKey(k.service, k.day), p.seq)
		if err != nil {
			// Writing a new Seq now would hide whether p landed: wait.
			errs = append(errs, err)
			if d := deltas[k]; d != nil {
				c.restore(k, d)
				delete(deltas, k)
			}
			continue
		}
		delete(c.pending, k)
		if landed {
			continue
		}
		d := deltas[k]
		if d == nil {
			d = map[string]int64{}
			deltas[k] = d
		}
		for prop, v := range p.delta {
			d[prop] += v
		}
	}
	for k, d := range deltas {
		c.seq++
		seq := fmt.Sprintf("%s-%d", c.run, c.seq)
		wrote, err := c.merge(ctx, statsKey(k.service, k.day), d, seq)
		switch {
		case err == nil:
		case wrote:
			errs = append(errs, err)
			c.pending[k] = pendingDelta{seq, d}
		default:
			errs = append(errs, err)
			c.restore(k, d)
		}
	}
	if len(errs) > 0 {
		c.failures.Inc()
		return fmt.Errorf("cannot flush event counts: %w", errors.Join(errs...))
	}
	return nil
}

// drain takes every count (atomically swapping it to zero) as per-entity
// property deltas. Buckets more than two days old that were already empty
// are forgotten.
func (c *Counters) drain() map[seriesKey]map[string]int64 {
	out := map[seriesKey]map[string]int64{}
	staleBefore := c.now().UnixNano()/int64(time.Hour) - 48
	c.mu.RLock()
	svcs := slices.Collect(maps.Values(c.svcs))
	c.mu.RUnlock()
	for _, sc := range svcs {
		sc.mu.Lock()
		for hour, hc := range sc.hours {
			var total int64
			var props map[string]int64
			h := int(((hour % 24) + 24) % 24)
			for lv := range numLevels {
				v := hc.n[lv].Swap(0)
				if v == 0 {
					continue
				}
				if props == nil {
					k := seriesKey{sc.name, dayOf(hour * int64(time.Hour))}
					if props = out[k]; props == nil {
						props = map[string]int64{}
						out[k] = props
					}
				}
				props[levelProps[h][lv]] += v
				total += v
			}
			if total > 0 {
				props[hourProps[h]] += total
			} else if hour < staleBefore && sc.last.Load() != hc {
				delete(sc.hours, hour)
			}
		}
		sc.mu.Unlock()
	}
	return out
}

// restore puts unflushed deltas back into the counters.
func (c *Counters) restore(k seriesKey, d map[string]int64) {
	sc := c.service([]byte(k.service))
	for h := range 24 {
		hour := k.day*24 + int64(h)
		for lv := range numLevels {
			if v := d[levelProps[h][lv]]; v != 0 {
				sc.bucket(hour).n[lv].Add(v)
			}
		}
	}
}

// landed reports whether this instance's entity in partition pk carries seq.
func (c *Counters) landed(ctx context.Context, pk, seq string) (bool, error) {
	e, err := c.store.Get(ctx, StatsTable, pk, c.instance)
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrTableNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cannot read %s/%s to see whether the last merge landed: %w", pk, c.instance, err)
	}
	return e.Props[seqProp] == seq, nil
}

// merge adds delta to this instance's entity in partition pk with Seq seq:
// read it, add, and merge it back under its ETag; on a conflict or a
// transient error read it again, and if it already carries seq the write
// landed and only its answer was lost. wrote reports whether a write may
// have landed when merge fails.
func (c *Counters) merge(ctx context.Context, pk string, delta map[string]int64, seq string) (wrote bool, err error) {
	tableCreated := false
	for try := 0; try < 20; try++ {
		e, err := c.store.Get(ctx, StatsTable, pk, c.instance)
		props := make(map[string]any, len(delta)+1)
		props[seqProp] = seq
		switch {
		case errors.Is(err, ErrNotFound):
			for k, v := range delta {
				props[k] = v
			}
			wrote = true
			_, err = c.store.Insert(ctx, StatsTable, Entity{PartitionKey: pk, RowKey: c.instance, Props: props})
		case err == nil && e.Props[seqProp] == seq:
			return false, nil // an earlier try landed
		case err == nil:
			for k, v := range delta {
				props[k] = asInt64(e.Props[k]) + v
			}
			wrote = true
			_, err = c.store.Merge(ctx, StatsTable, Entity{PartitionKey: pk, RowKey: c.instance, Props: props}, e.ETag)
		}
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, ErrTableNotFound) && !tableCreated:
			tableCreated = true
			if err := c.store.CreateTable(ctx, StatsTable); err != nil {
				return wrote, fmt.Errorf("cannot create table %s: %w", StatsTable, err)
			}
		case errors.Is(err, ErrPrecondition), errors.Is(err, ErrExists):
			c.conflicts.Inc()
		case IsTransient(err) && ctx.Err() == nil:
			if c.retry.Wait(ctx, try+1, err, "partition", pk) != nil {
				return wrote, err
			}
		default:
			return wrote, fmt.Errorf("cannot merge event counts into %s/%s: %w", pk, c.instance, err)
		}
	}
	return wrote, fmt.Errorf("cannot merge event counts into %s/%s: it keeps changing under us (is another process using --stats-instance %s?)", pk, c.instance, c.instance)
}

func asInt64(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}

// Run flushes every interval until ctx ends; the caller flushes once more
// at shutdown.
func (c *Counters) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.Flush(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("stats flush failed; counts kept for the next one", "err", err)
			}
		}
	}
}

// HourStats is one hour of a service's counts.
type HourStats struct {
	Total  int64
	Levels [numLevels]int64 // indexed by logline.Level (LevelNone: events without a level)
}

// ReadStats sums every instance's counts of service on the UTC day of day,
// hour by hour: one range query on the series' partition.
func ReadStats(ctx context.Context, store Store, service string, day time.Time) ([24]HourStats, error) {
	var out [24]HourStats
	ents, err := store.Query(ctx, StatsTable, statsKey(service, dayOf(day.UnixNano())), "", "", 1<<20)
	if errors.Is(err, ErrTableNotFound) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("cannot read the stats of %s: %w", service, err)
	}
	for _, e := range ents {
		for h := range 24 {
			out[h].Total += asInt64(e.Props[hourProps[h]])
			for lv := range numLevels {
				out[h].Levels[lv] += asInt64(e.Props[levelProps[h][lv]])
			}
		}
	}
	return out, nil
}

// ReadStats is the package function on the Counters' store.
func (c *Counters) ReadStats(ctx context.Context, service string, day time.Time) ([24]HourStats, error) {
	return ReadStats(ctx, c.store, service, day)
}
