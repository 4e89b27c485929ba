package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"ingest/internal/azurite"
	"ingest/storage"
	"ingest/tablesink"
)

// TestAzureLogins: the login table path on Azurite through the real binary.
// Login attempts are posted while the server is killed with -9 twice; after
// a restart every acknowledged attempt is stored once. Then ingest logins,
// stats and retention run against the same account with --storage, and
// retention deletes a day table past the retention whole.
func TestAzureLogins(t *testing.T) {
	conn := azurite.ConnString(t)
	nonce := fmt.Sprintf("n%d", time.Now().UnixNano()%1e9)
	container := "logins" + nonce
	users := []string{nonce + "-a", nonce + "-b", nonce + "-c@example.com"}
	service := "azlogins" + nonce
	dir := t.TempDir()
	args := []string{"--storage", conn, "--container", container, "--flush-interval", "30ms", "--flush-bytes", "64KiB"}

	var acked []string
	for round := range 2 {
		s := start(t, dir, args...)
		stop := make(chan struct{})
		wait := postLogins(s, fmt.Sprintf("r%d", round), users, stop)
		time.Sleep(700 * time.Millisecond)
		s.kill9()
		close(stop)
		acked = append(acked, wait()...)
	}
	if len(acked) == 0 {
		t.Fatal("no login batch was acknowledged before the kills")
	}
	s := start(t, dir, args...)
	s.waitDrained()
	stored := map[string]int{}
	for _, u := range users {
		resp, err := http.Get(s.url + "/v1/logins/" + u + "?days=2&limit=100000")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, m := range regexp.MustCompile(`"id":"([^"]+)"`).FindAllSubmatch(b, -1) {
			stored[string(m[1])]++
		}
	}
	checkExactlyOnce(t, acked, stored)
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", events(service, "h1", "st", 30)); code != 202 {
		t.Fatalf("POST /v1/logs = %d %s", code, body)
	}
	if code := s.stop(); code != 0 { // flushes, which counts the events
		t.Fatalf("exit code %d", code)
	}

	// The commands, on the Azure account (an empty --data-dir: no server there).
	cli := func(args ...string) string {
		t.Helper()
		out, err := runCLI(t, nil, append(args, "--storage", conn, "--data-dir", t.TempDir())...)
		if err != nil {
			t.Fatalf("ingest %s: %v\n%s", args[0], err, out)
		}
		return out
	}
	out := cli("logins", users[0], "--days", "2", "--limit", "100000", "--format", "ndjson")
	want := 0
	for id, n := range stored {
		if strings.HasPrefix(id, "r") && n > 0 && strings.Contains(id, "-u0-") {
			want++
		}
	}
	if got := strings.Count(out, "\n"); got != want || want == 0 {
		t.Fatalf("ingest logins %s --storage: %d attempts, want %d", users[0], got, want)
	}
	if out := cli("stats", service, "--day", "2026-11-21"); !regexp.MustCompile(`16:00\s+30\s+0\s+0\s+30\s`).MatchString(out) {
		t.Fatalf("ingest stats --storage:\n%s", out)
	}

	// A day table far past the retention is deleted whole, in one operation.
	svc, err := (&storage.Config{ConnString: conn}).TableClient()
	if err != nil {
		t.Fatal(err)
	}
	tables := tablesink.NewAzureStore(svc)
	old := "logins20200101"
	if err := tables.CreateTable(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if _, err := tables.Insert(context.Background(), old, tablesink.Entity{PartitionKey: "001e", RowKey: "x~1", Props: map[string]any{"User": "x"}}); err != nil {
		t.Fatal(err)
	}
	if out := cli("retention", "--dry-run"); !strings.Contains(out, old) {
		t.Fatalf("retention --dry-run does not list %s:\n%s", old, out)
	}
	if out := cli("retention"); !strings.Contains(out, old) {
		t.Fatalf("retention does not report deleting %s:\n%s", old, out)
	}
	if names, err := tables.ListTables(context.Background(), old); err != nil || len(names) != 0 {
		t.Fatalf("after retention: %v, %v; want %s gone", names, err, old)
	}
}

// postLogins posts batches of 50 login attempts spread over users, with
// unique ids "<prefix>-u<user>-<batch>-<i>", until stop is closed, and
// returns the ids of every batch answered 202.
func postLogins(s *server, prefix string, users []string, stop <-chan struct{}) func() []string {
	var acked []string
	done := make(chan struct{})
	client := &http.Client{Timeout: 60 * time.Second}
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			var body []byte
			var ids []string
			for i := range 50 {
				id := fmt.Sprintf("%s-u%d-%d-%d", prefix, i%len(users), n, i)
				ids = append(ids, id)
				body = fmt.Appendf(body, `{"user":%q,"success":false,"ip":"198.51.100.7","id":%q}`+"\n", users[i%len(users)], id)
			}
			resp, err := client.Post(s.url+"/v1/logins", "application/x-ndjson", bytes.NewReader(body))
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 202 {
				acked = append(acked, ids...)
			}
		}
	}()
	return func() []string { <-done; return acked }
}
