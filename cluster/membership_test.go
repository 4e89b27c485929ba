package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"ingest/internal/azurite"
	"ingest/storage"
)

func TestMain(m *testing.M) { os.Exit(azurite.RunMain(m)) }

// testConfig heartbeats fast enough for a test.
var testConfig = Config{Heartbeat: 50 * time.Millisecond, Expiry: 300 * time.Millisecond}

func newTable(t *testing.T, group string) *Table {
	t.Helper()
	svc, err := (&storage.Config{ConnString: azurite.ConnString(t)}).TableClient()
	if err != nil {
		t.Fatal(err)
	}
	return NewTable(svc, group)
}

// join starts a member of group that heartbeats until the test ends or
// stop is called.
func join(t *testing.T, table *Table, id, url string) (m *Membership, stop func()) {
	t.Helper()
	m = New(testConfig, Member{ID: id, Version: "v-" + id}, table, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	m.Start(ctx, url)
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return m, stop
}

func ids(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func waitIDs(t *testing.T, m *Membership, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(ids(m.Members()), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s sees %v, want %v", m.self.ID, ids(m.Members()), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCount waits for the watchers, told after the members change, to see
// want.
func waitCount(t *testing.T, count *atomic.Int32, want int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for count.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("watched count %d, want %d", count.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMembership: instances of one group see each other with their URL and
// version; another group is apart; a member that stops heartbeating is
// gone after the expiry, one that leaves at the next listing; a restart
// under the same id is one member.
func TestMembership(t *testing.T) {
	group := fmt.Sprintf("c%d", time.Now().UnixNano())
	table := newTable(t, group)
	a, _ := join(t, table, "a", "http://10.0.0.1:8080")
	var count atomic.Int32
	a.Watch(func(n int) { count.Store(int32(n)) })
	b, stopB := join(t, table, "b", "http://10.0.0.2:8080")
	c, stopC := join(t, table, "c", "http://10.0.0.3:8080")
	other, _ := join(t, newTable(t, group+"x"), "z", "http://10.0.0.9:8080")
	for _, m := range []*Membership{a, b, c} {
		waitIDs(t, m, "a", "b", "c")
	}
	waitIDs(t, other, "z")
	ms := a.Members()
	if !ms[0].Self || ms[1].Self || ms[1].URL != "http://10.0.0.2:8080" || ms[1].Version != "v-b" || ms[1].TailKey != b.TailKey() ||
		time.Since(ms[1].Heartbeat) > time.Second || ms[1].Started.IsZero() {
		t.Fatalf("a sees %+v", ms)
	}
	waitCount(t, &count, 3)
	if a.Count() != 3 || len(a.Peers()) != 2 {
		t.Fatalf("count %d, peers %d, watched %d; want 3, 2, 3", a.Count(), len(a.Peers()), count.Load())
	}
	if a.TailKey() == b.TailKey() || len(a.TailKey()) != 64 {
		t.Fatalf("tail keys %q %q: want distinct random keys", a.TailKey(), b.TailKey())
	}

	stopB() // killed: no Leave
	start := time.Now()
	waitIDs(t, a, "a", "c")
	if d := time.Since(start); d < testConfig.Expiry/2 {
		t.Fatalf("b dropped %v after its last heartbeat, before the expiry %v", d, testConfig.Expiry)
	}
	stopC()
	c.Leave(context.Background())
	waitIDs(t, a, "a")
	waitCount(t, &count, 1)

	// A restarted b (same id, new run) comes back as one member.
	join(t, table, "b", "http://10.0.0.2:8080")
	b2, _ := join(t, table, "b2", "http://10.0.0.4:8080")
	waitIDs(t, a, "a", "b", "b2")
	waitIDs(t, b2, "a", "b", "b2")
}

// TestMembershipAlone: without a table the cluster is this instance.
func TestMembershipAlone(t *testing.T) {
	m := New(testConfig, Member{ID: "solo", Version: "v1"}, nil, nil, nil)
	m.Start(context.Background(), "http://127.0.0.1:8080")
	m.Run(context.Background()) // returns at once
	m.Leave(context.Background())
	ms := m.Members()
	if len(ms) != 1 || !ms[0].Self || ms[0].ID != "solo" || ms[0].URL != "http://127.0.0.1:8080" || m.Count() != 1 || len(m.Peers()) != 0 {
		t.Fatalf("alone: %+v", ms)
	}
}

// TestMembershipPrunes: an entry silent for pruneAfter is deleted by the
// next listing, so departed instances do not pile up in the partition.
func TestMembershipPrunes(t *testing.T) {
	defer func(d time.Duration) { pruneAfter = d }(pruneAfter)
	pruneAfter = 500 * time.Millisecond
	group := fmt.Sprintf("p%d", time.Now().UnixNano())
	table := newTable(t, group)
	_, stopGone := join(t, table, "gone", "http://10.0.0.5:8080")
	stopGone()
	join(t, table, "stays", "http://10.0.0.6:8080")
	deadline := time.Now().Add(10 * time.Second)
	for {
		listed, err := table.list(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) == 1 && listed[0].ID == "stays" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("entries %v after 10s, want only the live one", listed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
