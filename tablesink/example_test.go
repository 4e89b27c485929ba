package tablesink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ingest/intake/login"
	"ingest/tablesink"
)

// The write path (AppendRecord at intake, Flush from the buffer) and the
// read path (Tail), on the embedded store.
func Example() {
	dir, _ := os.MkdirTemp("", "tablesink")
	defer os.RemoveAll(dir)
	store, err := tablesink.OpenBolt(filepath.Join(dir, "tables.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	cfg := tablesink.DefaultConfig()
	s, err := tablesink.New(cfg, store, nil, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := s.Maintain(ctx, false); err != nil { // today's and tomorrow's tables
		panic(err)
	}

	now := time.Now()
	records := map[string][]byte{}
	for i, id := range []string{"a1", "a2", "a3"} {
		a := login.Attempt{Time: now.Add(time.Duration(i) * time.Second).UnixNano(), User: []byte("alice@example.com"),
			ID: []byte(id), Success: id == "a3", HasSuccess: true}
		key, rec, err := s.AppendRecord(records[tablesink.TableFor(a.Time)], &a)
		if err != nil {
			panic(err)
		}
		records[key] = rec
	}
	for key, data := range records {
		if err := s.Write(ctx, key, data); err != nil {
			panic(err)
		}
	}
	latest, err := s.Tail(ctx, "alice@example.com", 1, 2)
	if err != nil {
		panic(err)
	}
	for _, a := range latest {
		fmt.Printf("%s %s success=%v\n", a.User, a.ID, a.Success)
	}
	// Output:
	// alice@example.com a3 success=true
	// alice@example.com a2 success=false
}
