package deadletter

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"ingest/blobsink"
	"ingest/internal/retry"
)

// TestWritersNeverShareABlob: two writers on one container (two
// instances), writing in the same hour, each claim blobs of their own, in
// number order, and every batch is read back whole.
func TestWritersNeverShareABlob(t *testing.T) {
	store, err := blobsink.NewFileStore(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	p := retry.Policy{Op: "test", Tries: 3, Min: time.Millisecond, Max: time.Millisecond}
	writers := []*Writer{New(store, "_deadletter/x", p), New(store, "_deadletter/x", p)}
	now := time.Date(2026, 11, 21, 18, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	wrote := map[string]string{}
	var wg sync.WaitGroup
	for i, w := range writers {
		for j := range 5 {
			wg.Go(func() {
				block := fmt.Sprintf("{\"writer\":%d,\"batch\":%d}\n", i, j)
				name, err := w.Write(context.Background(), now, []byte(block))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if prev, ok := wrote[name]; ok {
					t.Errorf("%s written twice: %q and %q", name, prev, block)
				}
				wrote[name] = block
			})
		}
	}
	wg.Wait()
	for n := 1; n <= 10; n++ {
		name := fmt.Sprintf("_deadletter/x/2026/11/21/1800/%06d.log", n)
		r, err := store.Open(context.Background(), name)
		if err != nil {
			t.Fatalf("%s: %v (claimed: %v)", name, err, wrote)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(b) != wrote[name] {
			t.Fatalf("%s holds %q, %v; want %q", name, b, err, wrote[name])
		}
	}
}
