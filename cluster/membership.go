package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pruneAfter is how long an entry may stay silent before a listing
// instance deletes it. A variable for tests.
var pruneAfter = time.Hour

// Member is one instance as the others see it.
type Member struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"` // advertised: where its peers reach it
	Version   string    `json:"version"`
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"last_heartbeat"` // on this instance's clock
	Self      bool      `json:"self"`
	// TailKey is what a peer presents to follow this instance's own tail
	// (GET /v1/tail?local=1). Never shown.
	TailKey string `json:"-"`
}

// Membership is this instance's view of the cluster, kept fresh by Run.
// Safe for concurrent use.
type Membership struct {
	cfg       Config
	table     *Table // nil: alone
	log       *slog.Logger
	now       func() time.Time
	requests  prometheus.Counter // storage requests of the bookkeeping
	instances prometheus.Gauge

	mu       sync.Mutex
	self     entry
	others   []Member // listed live, with Heartbeat on this clock
	failing  bool     // the last heartbeat failed (logged once)
	watchers []func(n int)
	count    int // the count watchers last saw
}

// New returns the membership of self (ID, Version; URL may come with
// Start) in table, nil for an instance alone. It gives self a run id and a
// tail key of its own. Its metrics are registered on reg (nil: not
// registered); log may be nil.
func New(cfg Config, self Member, table *Table, reg prometheus.Registerer, log *slog.Logger) *Membership {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	self.Self = true
	self.TailKey = randomHex(32)
	m := &Membership{cfg: cfg, table: table, log: log, now: time.Now, count: 1,
		requests: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_cluster_storage_requests_total",
			Help: "Storage requests of the cluster membership: renewing this instance's entry, listing the others, deleting departed ones."}),
		instances: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_cluster_instances",
			Help: "Live instances of the cluster, this one included, as of the last listing."})}
	m.instances.Set(1)
	m.self = entry{Member: self, run: randomHex(8)}
	if reg != nil {
		reg.MustRegister(m.requests, m.instances)
	}
	return m
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Watch calls fn with the live count (at least 1) now and whenever it
// changes; fn must not block.
func (m *Membership) Watch(fn func(n int)) {
	m.mu.Lock()
	m.watchers = append(m.watchers, fn)
	n := m.count
	m.mu.Unlock()
	fn(n)
}

// Start sets the advertised URL, registers this instance and reads the
// others once, for at most one heartbeat interval (a storage outage at
// start-up delays nothing beyond that: Run keeps trying).
func (m *Membership) Start(ctx context.Context, url string) {
	now := m.now()
	m.mu.Lock()
	m.self.URL, m.self.Started = url, now
	m.mu.Unlock()
	if m.table == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Heartbeat)
	defer cancel()
	m.beat(ctx)
}

// beatTimeout bounds one heartbeat: half the expiry, so that a slow
// storage answer still renews the entry in time, while a hung one is
// abandoned before the others would drop this instance.
func (m *Membership) beatTimeout() time.Duration { return m.cfg.Expiry / 2 }

// Run heartbeats every Config.Heartbeat until ctx ends.
func (m *Membership) Run(ctx context.Context) {
	if m.table == nil {
		return
	}
	t := time.NewTicker(m.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c, cancel := context.WithTimeout(ctx, m.beatTimeout())
			m.beat(c)
			cancel()
		}
	}
}

// Leave deletes this instance's entry, so the others drop it at their next
// listing instead of after the expiry. Call it once, at shutdown, after
// Run has stopped or while it runs its last beat.
func (m *Membership) Leave(ctx context.Context) {
	m.mu.Lock()
	etag, id := m.self.etag, m.self.ID
	m.mu.Unlock()
	if m.table == nil || etag == "" {
		return
	}
	m.requests.Inc()
	if err := m.table.remove(ctx, id, etag); err != nil {
		m.log.Warn("cannot leave the cluster; the others drop this instance once it expires", "err", err)
	}
}

// beat writes this instance's entry, lists the group and updates the view.
func (m *Membership) beat(ctx context.Context) {
	m.mu.Lock()
	self := m.self
	m.mu.Unlock()
	etag, err := m.table.put(ctx, &self)
	m.requests.Inc()
	var listed []entry
	if err == nil {
		listed, err = m.table.list(ctx)
		m.requests.Inc()
	}
	listedAt := m.now()
	m.mu.Lock()
	if etag != "" {
		m.self.etag = etag
		m.self.Heartbeat = listedAt
	}
	if err != nil {
		if !m.failing {
			m.log.Warn("cannot renew this instance's cluster entry; the view of the others ages until storage answers", "err", err)
		}
		m.failing = true
	} else {
		if m.failing {
			m.log.Info("cluster entry renewed again")
		}
		m.failing = false
		m.others = m.live(listed, listedAt)
	}
	notify, n := m.recount()
	m.mu.Unlock()
	for _, fn := range notify {
		fn(n)
	}
	if err == nil {
		m.prune(ctx, listed, listedAt)
	}
}

// live turns a listing into the other members with a heartbeat on this
// clock, each URL once, and notices another process using this id.
// Called with m.mu held.
func (m *Membership) live(listed []entry, listedAt time.Time) []Member {
	var out []Member
	for _, e := range listed {
		if e.ID == m.self.ID {
			if e.run != m.self.run {
				m.log.Warn("another process writes this instance's cluster entry: give each instance its own --stats-instance", "id", e.ID, "url", e.URL)
			}
			continue
		}
		age := m.age(e, listed, listedAt)
		e.Heartbeat = listedAt.Add(-age)
		if age > m.cfg.Expiry || e.URL == "" || e.URL == m.self.URL {
			continue
		}
		if i := slices.IndexFunc(out, func(o Member) bool { return o.URL == e.URL }); i >= 0 {
			if out[i].Heartbeat.Before(e.Heartbeat) {
				out[i] = e.Member // a restart under a new id: the newer one answers there
			}
			continue
		}
		out = append(out, e.Member)
	}
	return out
}

// age is how long before the listing e was last written, on the service's
// clock: against the Timestamp of this instance's own entry, written just
// before; without it, against this clock.
func (m *Membership) age(e entry, listed []entry, listedAt time.Time) time.Duration {
	for _, o := range listed {
		if o.ID == m.self.ID && o.run == m.self.run {
			return o.stamp.Sub(e.stamp)
		}
	}
	return listedAt.Sub(e.stamp)
}

// prune deletes the entries silent for pruneAfter.
func (m *Membership) prune(ctx context.Context, listed []entry, listedAt time.Time) {
	for _, e := range listed {
		if e.ID != m.self.ID && m.age(e, listed, listedAt) > pruneAfter {
			m.requests.Inc()
			if err := m.table.remove(ctx, e.ID, e.etag); err != nil {
				m.log.Debug("cannot prune a silent cluster entry", "id", e.ID, "err", err)
			}
		}
	}
}

// recount returns the watchers to tell and the live count, when it
// changed. Called with m.mu held.
func (m *Membership) recount() ([]func(int), int) {
	n := 1 + len(m.fresh())
	m.instances.Set(float64(n))
	if n == m.count {
		return nil, n
	}
	m.count = n
	return slices.Clone(m.watchers), n
}

// fresh is the others still within the expiry now. Called with m.mu held.
func (m *Membership) fresh() []Member {
	cutoff := m.now().Add(-m.cfg.Expiry)
	var out []Member
	for _, o := range m.others {
		if o.Heartbeat.After(cutoff) {
			out = append(out, o)
		}
	}
	return out
}

// Members lists the live instances, this one included, by id.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	self := m.self.Member
	if m.table == nil || self.Heartbeat.IsZero() {
		self.Heartbeat = m.now()
	}
	out := append([]Member{self}, m.fresh()...)
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Peers lists the other live instances.
func (m *Membership) Peers() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fresh()
}

// Count is the number of live instances, this one included: at least 1.
func (m *Membership) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return 1 + len(m.fresh())
}

// TailKey is the key this instance accepts from its peers for its own tail.
func (m *Membership) TailKey() string { return m.self.TailKey }

// Config returns the membership's timing.
func (m *Membership) Config() Config { return m.cfg }
