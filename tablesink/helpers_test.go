package tablesink

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ingest/internal/azurite"
	"ingest/internal/retry"
	"ingest/storage"
)

func TestMain(m *testing.M) { os.Exit(azurite.RunMain(m)) }

// backends lists the two Store implementations for the shared suite.
var backends = []struct {
	name string
	open func(t testing.TB) Store
}{
	{"bolt", func(t testing.TB) Store {
		s, err := OpenBolt(filepath.Join(t.TempDir(), "tables.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"azure", func(t testing.TB) Store {
		cfg := storage.Config{ConnString: azurite.ConnString(t)}
		svc, err := cfg.TableClient()
		if err != nil {
			t.Fatal(err)
		}
		return NewAzureStore(svc)
	}},
}

// forEachStore runs fn against each backend.
func forEachStore(t *testing.T, fn func(t *testing.T, st Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

var nameSeq atomic.Int64

// uniqueName returns a table-name-safe name no other test uses on the
// shared Azurite: letters, a sequence number, and the process id.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s%dp%d", prefix, nameSeq.Add(1), os.Getpid()%100000)
}

// day0 is the test clock's day: 2026-11-21 12:00 UTC.
var day0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// newTestSink returns a Sink on st with its own table prefix, a fixed clock
// and no retry sleeps.
func newTestSink(t testing.TB, st Store, cfg Config) *Sink {
	t.Helper()
	s, err := New(cfg, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.prefix = uniqueName("t") + "logins"
	now := day0
	s.now = func() time.Time { return now }
	fastRetries(s)
	return s
}

// countingStore counts calls per method and can fail Batch calls.
type countingStore struct {
	Store
	mu        sync.Mutex
	calls     map[string]int
	failBatch []error // returned by the next Batch calls, in order
}

func newCounting(st Store) *countingStore { return &countingStore{Store: st, calls: map[string]int{}} }

func (c *countingStore) count(m string) {
	c.mu.Lock()
	c.calls[m]++
	c.mu.Unlock()
}

func (c *countingStore) n(m string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[m]
}

func (c *countingStore) CreateTable(ctx context.Context, name string) error {
	c.count("CreateTable")
	return c.Store.CreateTable(ctx, name)
}

func (c *countingStore) DeleteTable(ctx context.Context, name string) error {
	c.count("DeleteTable")
	return c.Store.DeleteTable(ctx, name)
}

func (c *countingStore) Batch(ctx context.Context, table string, ents []Entity) error {
	c.count("Batch")
	c.mu.Lock()
	var err error
	if len(c.failBatch) > 0 {
		err, c.failBatch = c.failBatch[0], c.failBatch[1:]
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.Store.Batch(ctx, table, ents)
}

func (c *countingStore) Query(ctx context.Context, table, pk, rowFrom, rowTo string, top int) ([]Entity, error) {
	c.count("Query")
	return c.Store.Query(ctx, table, pk, rowFrom, rowTo, top)
}

// countRows counts the entities of one partition.
func countRows(t testing.TB, st Store, table, pk string) int {
	t.Helper()
	ents, err := st.Query(context.Background(), table, pk, "", "", 1<<20)
	if err != nil {
		t.Fatalf("query %s/%s: %v", table, pk, err)
	}
	return len(ents)
}

// fastRetries shrinks the sink's retry backoff to microseconds.
func fastRetries(s *Sink) {
	for _, p := range []*retry.Policy{&s.writeRetry, &s.throttleRetry} {
		p.Min, p.Max = time.Microsecond, 10*time.Microsecond
	}
}
