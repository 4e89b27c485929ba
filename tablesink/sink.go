package tablesink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"ingest/deadletter"
	"ingest/internal/jsonstr"
	"ingest/internal/retry"
	"ingest/shard"
)

// Sink writes login attempts to day tables and reads them back.
type Sink struct {
	cfg    Config
	prefix string // day table names: prefix + YYYYMMDD (TablePrefix; tests use their own)
	store  Store
	keyer  *shard.Keyer
	log    *slog.Logger
	now    func() time.Time
	// Retries of a write: on transient errors (--login-flush-retries
	// tries), and while the service throttles (maxThrottledTries).
	writeRetry, throttleRetry retry.Policy
	retryMetrics              *retry.Metrics
	scratch                   sync.Pool
	day                       atomic.Pointer[dayName]
	schemes                   schemeCache
	dead                      *deadletter.Writer // nil: refused records are dropped, counted
	pace                      *partitionPacer
	m                         metrics
}

type dayName struct {
	day  int64
	name string
}

type metrics struct {
	entities     prometheus.Counter
	transactions prometheus.Counter
	requests     prometheus.Counter
	deadLetters  *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	created      prometheus.Counter
	deleted      prometheus.Counter
	paced        prometheus.Counter
}

// New returns a Sink on store. Metrics are registered on reg (nil: not
// registered); log may be nil.
func New(cfg Config, store Store, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sink{cfg: cfg, prefix: TablePrefix, store: store, keyer: shard.NewKeyer(cfg.Shard), log: log, now: time.Now}
	s.pace = newPartitionPacer(func() float64 { return partitionRate / float64(s.keyer.Instances()) })
	s.retryMetrics = retry.NewMetrics(reg)
	s.writeRetry = retry.Policy{Op: "write_login_transaction", Min: 100 * time.Millisecond, Max: 5 * time.Second,
		Tries: cfg.Retries, Log: log, Metrics: s.retryMetrics}
	s.throttleRetry = retry.Policy{Op: "write_login_transaction_throttled", Min: 200 * time.Millisecond, Max: 10 * time.Second,
		Tries: maxThrottledTries, Log: log, Metrics: s.retryMetrics}
	s.scratch.New = func() any { b := make([]byte, 0, 256); return &b }
	s.m = metrics{
		entities: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_login_entities_written_total", Help: "Login attempts committed to day tables (upserts, replays included).",
		}),
		transactions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_login_transactions_total", Help: "Entity group transactions committed to day tables.",
		}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_login_write_requests_total", Help: "Write requests sent to the table service for login attempts (transactions and single upserts, retries included); divided by ingest_login_entities_written_total it is the cost per attempt.",
		}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingest_login_dead_letters_total", Help: "Login records written to the dead-letter blobs (_deadletter/logins/...) instead of the day table, by reason: rejected (the table service refuses the entity on its own) or bad_record (unparseable or over Azure's limits).",
		}, []string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingest_login_records_dropped_total", Help: "Buffered login records not stored, by reason: expired (day past the retention at flush time), or rejected and bad_record when no dead-letter store is configured.",
		}, []string{"reason"}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_login_tables_created_total", Help: "Day tables created (ahead of their day, or on first write).",
		}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_login_tables_deleted_total", Help: "Day tables deleted whole by the retention.",
		}),
		paced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ingest_login_partition_wait_seconds_total", Help: "Time login flushes waited to keep one partition under 1,500 entities/s across the live instances (Azure's per-partition target is 2,000); it grows when flushes carry a backlog for a hot bucket.",
		}),
	}
	// The documented reasons exist at 0 from the start.
	for _, r := range []string{"rejected", "bad_record"} {
		s.m.deadLetters.WithLabelValues(r)
	}
	s.retryMetrics.Declare(s.writeRetry.Op)
	s.retryMetrics.Declare(s.throttleRetry.Op)
	for _, r := range []string{"expired", "rejected", "bad_record"} {
		s.m.dropped.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{s.m.entities, s.m.transactions, s.m.requests, s.m.deadLetters, s.m.dropped, s.m.created, s.m.deleted, s.m.paced} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("cannot register tablesink metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Keyer is the sink's key builder (for tools that show the key layout).
func (s *Sink) Keyer() *shard.Keyer { return s.keyer }

// ChunkBytes is the size of the buffer's login flushes (--login-flush-bytes):
// the login stream's FlushBytes in the buffer's stream registry.
func (s *Sink) ChunkBytes() int64 { return s.cfg.FlushBytes }

// FlushAge is how old the login attempts of a day get at most before the
// buffer flushes them (--login-flush-interval): the login stream's
// FlushAge in the buffer's stream registry.
func (s *Sink) FlushAge() time.Duration { return s.cfg.FlushInterval }

// FlushQuiet is how long no login attempt of a day may arrive before the
// buffer flushes those it holds (--login-flush-quiet): the login stream's
// FlushQuiet.
func (s *Sink) FlushQuiet() time.Duration { return s.cfg.FlushQuiet }

// Store is the sink's table store.
func (s *Sink) Store() Store { return s.store }

// dayTable is the name of the day's table (tableName with the sink's
// prefix), cached for the current day so AppendRecord does not allocate it
// per attempt.
func (s *Sink) dayTable(day int64) string {
	if d := s.day.Load(); d != nil && d.day == day {
		return d.name
	}
	d := &dayName{day, tableName(s.prefix, day)}
	s.day.Store(d)
	return d.name
}

// expired reports whether a day is past the retention: its table is (or is
// about to be) deleted, and a deleted name must never be created again.
func (s *Sink) expired(day int64) bool {
	return dayOf(s.now().UnixNano())-day > int64(s.cfg.RetentionDays)
}

// Write stores the records of one day table (key, as AppendRecord returned
// it): grouped by PartitionKey (a hash bucket, shared by many users) into
// entity group transactions of at most 100 entities and 4 MiB,
// --login-flush-parallel in flight at once, each an upsert so that a
// replayed or retried flush duplicates nothing. Throttling (503 ServerBusy,
// 429) and other transient errors are retried with exponential backoff and
// jitter; a missing table is created and the transaction retried. An
// entity the service refuses on its own, and a record that cannot be made
// into an entity, goes to a dead-letter blob with the reason (see
// SetDeadLetters) and the flush moves on. It returns nil only when every
// record is committed or dead-lettered (or dropped because its day is past
// the retention, counted); otherwise the caller retries the same data later.
func (s *Sink) Write(ctx context.Context, key string, data []byte) error {
	day, ok := parseTableName(s.prefix, key)
	if !ok {
		return fmt.Errorf("cannot flush login records: %q is not a day table name (logins{YYYYMMDD})", key)
	}
	if s.expired(day) {
		n := bytes.Count(data, []byte{'\n'})
		s.m.dropped.WithLabelValues("expired").Add(float64(n))
		s.log.Warn("dropping login attempts past the retention", "table", key, "records", n, "retention_days", s.cfg.RetentionDays)
		return nil
	}
	ents, bad := s.parseRecords(key, data)
	if err := s.deadLetter(ctx, key, bad); err != nil {
		return err
	}
	batches := buildBatches(s.withSaltedMarkers(ents))
	if len(batches) == 0 {
		return nil
	}
	if mb, ok := s.store.(multiBatcher); ok {
		n := 0
		for _, b := range batches {
			n += len(b)
		}
		err := s.submit(ctx, key, day, len(batches), n, func() error { return mb.Batches(ctx, key, batches) })
		if err != nil {
			return fmt.Errorf("cannot flush %d transactions to table %s: %w", len(batches), key, err)
		}
		return nil
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		rejected []deadLetter
		sem      = make(chan struct{}, s.cfg.Parallel)
	)
	for _, b := range batches {
		// Batches come round by round over the partitions, so a wait here
		// comes in the later rounds, where only the busiest partitions are
		// left. (The embedded store above has no partitions to pace.)
		waited, err := s.pace.wait(ctx, key, b[0].PartitionKey, len(b))
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			break
		}
		s.m.paced.Add(waited.Seconds())
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := s.submit(ctx, key, day, 1, len(b), func() error { return s.store.Batch(ctx, key, b) })
			var refused []deadLetter
			if errors.Is(err, errRejected) {
				refused, err = s.isolate(ctx, key, day, b)
			}
			mu.Lock()
			rejected = append(rejected, refused...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("cannot flush %d of %d transactions to table %s: %w", len(errs), len(batches), key, errors.Join(errs...))
	}
	return s.deadLetter(ctx, key, rejected)
}

// parseRecords turns record lines into entities, each with its JSON
// (checkedJSON); the lines that cannot be stored (unparseable, or over
// Azure's limits) come back as dead letters.
func (s *Sink) parseRecords(table string, data []byte) (ents []Entity, bad []deadLetter) {
	var x jsonstr.Index
	ents = make([]Entity, 0, bytes.Count(data, []byte{'\n'})+1)
	var a arena
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := recordEntity(&x, &a, line)
		if err != nil {
			s.log.Warn("a login record cannot be stored", "table", table, "line", n, "err", err)
			bad = append(bad, deadLetter{reason: "bad_record", err: err, record: line})
			continue
		}
		e.checkedJSON = a.entityJSON(&e)
		ents = append(ents, e)
	}
	return ents, bad
}

// withSaltedMarkers adds, for every user with attempts under a salted
// partition, the user's salted marker in the user's unsalted partition: the
// row that tells Tail to read the salted partitions too. It is an upsert
// like the others, so writing it at every flush of a hot user costs one
// entity per user and flush.
func (s *Sink) withSaltedMarkers(ents []Entity) []Entity {
	var seen map[string]bool
	var home, raw, esc []byte
	n := len(ents)
	for i := range n {
		// The user as the RowKey holds it (raw bytes, as reads hash them).
		rk := ents[i].RowKey
		esc = append(esc[:0], rk[:max(strings.IndexByte(rk, shard.UserSep), 0)]...)
		raw = esc
		if bytes.IndexByte(esc, '%') >= 0 {
			raw, _ = shard.UnescapeKey(raw[:0:0], esc)
		}
		home = s.keyer.AppendKey(home[:0], raw, -1)
		if string(home) == ents[i].PartitionKey || seen[string(esc)] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[string(esc)] = true
		marker := shard.SaltedMarker(nil, raw)
		ents = append(ents, Entity{PartitionKey: string(home), RowKey: string(marker),
			Props: map[string]any{"User": ents[i].Props["User"], "Salts": int32(s.cfg.Shard.Salts)}})
	}
	return ents
}

// isolate handles a transaction the service rejected as invalid: one bad
// entity fails its whole transaction, so each entity is written alone. The
// good ones are stored; those the service still rejects on their own can
// never be stored, and are returned for the dead-letter blob rather than
// retried forever while they hold up the day's other attempts.
func (s *Sink) isolate(ctx context.Context, table string, day int64, batch []Entity) ([]deadLetter, error) {
	var refused []deadLetter
	for i := range batch {
		one := batch[i : i+1]
		err := s.submit(ctx, table, day, 1, 1, func() error { return s.store.Batch(ctx, table, one) })
		switch {
		case err == nil:
		case errors.Is(err, errRejected):
			s.log.Error("the table service rejects a login attempt as invalid; writing it to the dead-letter blob", "table", table,
				"partition_key", one[0].PartitionKey, "row_key", one[0].RowKey, "err", err)
			refused = append(refused, deadLetter{reason: "rejected", err: err, record: appendEntityJSON(nil, &one[0])})
		default:
			return refused, err
		}
	}
	return refused, nil
}

// multiBatcher is implemented by stores that commit several entity group
// transactions at once more cheaply than one by one (BoltStore: one bolt
// transaction and one fsync for a whole Flush).
type multiBatcher interface {
	Batches(ctx context.Context, table string, batches [][]Entity) error
}

// maxThrottledTries bounds the tries of one transaction while the service
// throttles (503 ServerBusy, 429): throttling is the service asking for
// time, so it gets more tries than other transient errors and a longer
// backoff (up to 10 s, about a minute in all) before the flush fails and
// the buffer retries it later.
const maxThrottledTries = 16

// submit runs write (txns transactions of n entities), retrying throttling
// and transient errors through the retry policies and creating the table
// when it is missing.
func (s *Sink) submit(ctx context.Context, table string, day int64, txns, n int, write func() error) error {
	created := false
	tries, throttled := 0, 0
	for {
		s.m.requests.Add(float64(txns))
		err := write()
		var wait func() error
		switch {
		case err == nil:
			s.m.transactions.Add(float64(txns))
			s.m.entities.Add(float64(n))
			return nil
		case ctx.Err() != nil:
			return err
		case errors.Is(err, ErrTableNotFound) && !created:
			if s.expired(day) {
				s.m.dropped.WithLabelValues("expired").Add(float64(n))
				return nil
			}
			if err := s.createTable(ctx, table); err != nil {
				return err
			}
			created = true
			continue
		case errors.Is(err, errThrottled):
			if throttled++; throttled >= maxThrottledTries {
				return err
			}
			wait = func() error { return s.throttleRetry.Wait(ctx, throttled, err, "table", table) }
		case !isTransient(err):
			return err
		default:
			if tries++; tries >= s.cfg.Retries {
				return err
			}
			wait = func() error { return s.writeRetry.Wait(ctx, tries, err, "table", table) }
		}
		if wait() != nil {
			return err
		}
	}
}

// createTable creates a day table unless its day is past the retention.
func (s *Sink) createTable(ctx context.Context, table string) error {
	if day, ok := parseTableName(s.prefix, table); ok && s.expired(day) {
		return fmt.Errorf("cannot create table %s: its day is older than --login-retention-days (%d), and a deleted table's name is never reused", table, s.cfg.RetentionDays)
	}
	return s.ensureDayTable(ctx, table)
}
