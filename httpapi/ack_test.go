package httpapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ingest/buffer"
)

// storedText is every blob's content under dir, concatenated.
func storedText(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			all.Write(b)
		}
		return nil
	})
	return all.String()
}

// With --ack flush and storage down, no request hangs: the one already
// waiting gets 202 saying its batch is in the WAL and will be stored after
// --ack-timeout; once the flushes are known to fail, new batches get 503
// with Retry-After at once and nothing of them is written; when storage is
// back, the pending batch is stored and new ones are acknowledged again.
// (Before --ack-timeout, the first request waited as long as the outage.)
func TestAckFlushStorageDown(t *testing.T) {
	bcfg := buffer.Config{Ack: buffer.AckFlush, AckTimeout: time.Second, FlushInterval: 20 * time.Millisecond,
		FlushBytes: 1 << 20, BufferBytes: 64 << 20, FlushWorkers: 2, BudgetWait: 10 * time.Millisecond}
	f := newTCPFixture(t, Config{}, bcfg)
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	ts := `"ts":"` + time.Now().UTC().Format(time.RFC3339) + `"`

	if code, hdr, body := f.do(t, "POST", "/v1/logs/svc", ndjson, []byte(`{"msg":"before-outage",`+ts+`}`)); code != 202 || hdr.Get("X-Ingest-Ack") != "flush" {
		t.Fatalf("healthy storage: %d %s %s", code, hdr, body)
	}
	// Storage down: the blob directory becomes a file, so the next blob of
	// the hour cannot be created.
	away := f.blobs + ".away"
	if err := os.Rename(f.blobs, away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.blobs, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A new service: its blob must be created, which fails.
	start := time.Now()
	code, hdr, body := f.do(t, "POST", "/v1/logs/down", ndjson, []byte(`{"msg":"pending-batch",`+ts+`}`))
	waited := time.Since(start)
	if code != 202 || hdr.Get("X-Ingest-Ack") != "wal" || !strings.Contains(body, `"stored":false`) || !strings.Contains(body, "do not resend") {
		t.Fatalf("request waiting when --ack-timeout passed: %d %s %s", code, hdr, body)
	}
	if waited < time.Second {
		t.Errorf("answered after %v, before --ack-timeout (1s)", waited)
	}

	deadline := time.Now().Add(10 * time.Second)
	for !f.buf.StorageDown() {
		if time.Now().After(deadline) {
			t.Fatal("the buffer never saw storage failing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, hdr, body = f.do(t, "POST", "/v1/logs/down", ndjson, []byte(`{"msg":"refused-batch",`+ts+`}`))
	if code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "storage is failing") || !strings.Contains(body, "nothing was written") {
		t.Fatalf("request while storage is known down: %d %s %s", code, hdr, body)
	}

	// Storage back: the pending batch is stored, new batches are acknowledged.
	if err := os.Remove(f.blobs); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, f.blobs); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(storedText(t, f.blobs), "pending-batch") || f.buf.StorageDown() {
		if time.Now().After(deadline) {
			t.Fatal("the batch answered stored:false was never stored")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, hdr, body := f.do(t, "POST", "/v1/logs/down", ndjson, []byte(`{"msg":"after-outage",`+ts+`}`)); code != 202 || hdr.Get("X-Ingest-Ack") != "flush" {
		t.Fatalf("storage back: %d %s %s", code, hdr, body)
	}
	stored := storedText(t, f.blobs)
	for _, msg := range []string{"before-outage", "pending-batch", "after-outage"} {
		if strings.Count(stored, msg) != 1 {
			t.Errorf("%s stored %d times, want once", msg, strings.Count(stored, msg))
		}
	}
	if strings.Contains(stored, "refused-batch") {
		t.Error("the batch refused with 503 was stored: a client resending it would store it twice")
	}
}
