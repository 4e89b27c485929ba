package query

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"ingest/blobsink"
	"ingest/internal/azurite"
	"ingest/storage"
)

func TestMain(m *testing.M) { os.Exit(azurite.RunMain(m)) }

// TestAzureStore runs the suite on Azurite, a fresh container per store (the
// tests list whole containers for "*").
func TestAzureStore(t *testing.T) {
	client, err := (&storage.Config{ConnString: azurite.ConnString(t)}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	stamp := time.Now().UnixNano() % 1e9
	runSuite(t, func(t *testing.T) blobsink.Store {
		name := fmt.Sprintf("q%d-%d", stamp, n.Add(1))
		t.Cleanup(func() { _, _ = client.DeleteContainer(context.Background(), name, nil) })
		s, err := blobsink.NewAzureStore(t.Context(), client, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
