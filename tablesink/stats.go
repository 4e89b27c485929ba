package tablesink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	conflicts prometheus.Counter
	failures  prometheus.Counter
	retry     retry.Policy // transient errors of a merge
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
		svcs: map[string]*svcCounters{},
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

// Add counts n events of service at unixNano with level.
func (c *Counters) Add(service []byte, unixNano int64, level logline.Level, n int) {
	if int(level) >= numLevels {
		level = logline.LevelNone
	}
	hour := unixNano / int64(time.Hour)
	if unixNano%int64(time.Hour) < 0 {
		hour--
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
// table. On failure the counts are put back, to be merged by the next Flush.
func (c *Counters) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	deltas := c.drain()
	var errs []error
	for k, d := range deltas {
		if err := c.merge(ctx, statsKey(k.service, k.day), d); err != nil {
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
	svcs := make([]*svcCounters, 0, len(c.svcs))
	for _, sc := range c.svcs {
		svcs = append(svcs, sc)
	}
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

// merge adds deltas to this instance's entity in partition pk: read it,
// add, and merge it back under its ETag, again on a conflict.
func (c *Counters) merge(ctx context.Context, pk string, delta map[string]int64) error {
	tableCreated := false
	for try := 0; try < 20; try++ {
		e, err := c.store.Get(ctx, StatsTable, pk, c.instance)
		switch {
		case errors.Is(err, ErrNotFound):
			props := make(map[string]any, len(delta))
			for k, v := range delta {
				props[k] = v
			}
			_, err = c.store.Insert(ctx, StatsTable, Entity{PartitionKey: pk, RowKey: c.instance, Props: props})
		case err == nil:
			props := make(map[string]any, len(delta))
			for k, v := range delta {
				props[k] = asInt64(e.Props[k]) + v
			}
			_, err = c.store.Merge(ctx, StatsTable, Entity{PartitionKey: pk, RowKey: c.instance, Props: props}, e.ETag)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrTableNotFound) && !tableCreated:
			tableCreated = true
			if err := c.store.CreateTable(ctx, StatsTable); err != nil {
				return fmt.Errorf("cannot create table %s: %w", StatsTable, err)
			}
		case errors.Is(err, ErrPrecondition), errors.Is(err, ErrExists):
			c.conflicts.Inc()
		case IsTransient(err) && ctx.Err() == nil:
			if c.retry.Wait(ctx, try+1, err, "partition", pk) != nil {
				return err
			}
		default:
			return fmt.Errorf("cannot merge event counts into %s/%s: %w", pk, c.instance, err)
		}
	}
	return fmt.Errorf("cannot merge event counts into %s/%s: it keeps changing under us (is another process using --stats-instance %s?)", pk, c.instance, c.instance)
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
