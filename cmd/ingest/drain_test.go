package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"ingest/internal/ingestexec"
)

// runExit runs an ingest command and returns its combined output and exit
// code.
func runExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := ingestexec.Command(binary, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("ingest %s: %v", strings.Join(args, " "), err)
	return "", -1
}

// TestDrainStoresAnOrphanedWAL: a server on Azure storage is killed with
// acknowledged events in its write-ahead log, one flush of them waiting on
// a frozen storage; `ingest drain` on its directory stores them exactly
// once (events, login attempts, and their stats counts) and exits 0, and a
// second drain or a start on the directory stores nothing again. While a
// live server holds the directory, drain refuses with exit status 2, and
// so does a second server; the run file a killed server leaves behind
// refuses nobody.
func TestDrainStoresAnOrphanedWAL(t *testing.T) {
	az, pause := pausedAzurite(t)
	dir := t.TempDir()
	container := "drained"
	storageArgs := []string{"--storage", az.ConnString(), "--container", container}
	s := start(t, dir, append(storageArgs, "--flush-interval", "50ms", "--login-flush-interval", "50ms", "--login-flush-quiet", "0")...)
	acked := postEvents(t, s, "orphan", "stored", 30)
	s.waitDrained()

	out, code := runExit(t, append([]string{"drain", "--data-dir", dir}, storageArgs...)...)
	if code != 2 || !strings.Contains(out, "holds the directory") || !strings.Contains(out, "pid "+strconv.Itoa(s.Cmd.Process.Pid)) {
		t.Fatalf("drain beside a live server: exit %d, want 2 and a message naming the holder:\n%s", code, out)
	}
	second, err := ingestexec.Serve(binary, 0, nil, append([]string{"--data-dir", dir}, storageArgs...)...)
	if err == nil {
		second.Kill()
		t.Fatal("a second server started on a data directory a live server holds")
	}
	if !strings.Contains(err.Error(), "holds the directory") {
		t.Fatalf("a second server on the directory: %v, want a refusal naming the lock", err)
	}

	resume := pause()
	acked = append(acked, postEvents(t, s, "orphan", "unstored", 40)...)
	logins := postLoginBatch(t, s, "drained-user", 25)
	time.Sleep(500 * time.Millisecond) // flushes are waiting on the frozen storage
	s.kill9()
	if _, err := os.Stat(filepath.Join(dir, runFileName)); err != nil {
		t.Fatalf("the killed server left no run file to ignore: %v", err)
	}
	resume()

	out, code = runExit(t, append([]string{"drain", "--data-dir", dir}, storageArgs...)...)
	if code != 0 || !strings.Contains(out, "drained") {
		t.Fatalf("ingest drain: exit %d\n%s", code, out)
	}
	t.Logf("ingest drain: %s", strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]))
	stored, _ := readIDs(t, azureStore(t, az.ConnString(), container), "orphan/")
	checkExactlyOnce(t, acked, stored)
	checkLogins(t, dir, storageArgs, "drained-user", logins)
	checkStatsCount(t, storageArgs, "orphan", len(acked))

	// Drained: a second drain and a start find nothing left to store.
	if out, code := runExit(t, append([]string{"drain", "--data-dir", dir}, storageArgs...)...); code != 0 {
		t.Fatalf("a second drain: exit %d\n%s", code, out)
	}
	s2 := start(t, dir, storageArgs...)
	if code := s2.stop(); code != 0 {
		t.Fatalf("a start after the drain: exit %d", code)
	}
	stored, _ = readIDs(t, azureStore(t, az.ConnString(), container), "orphan/")
	checkExactlyOnce(t, acked, stored)
	checkStatsCount(t, storageArgs, "orphan", len(acked))

	if out, code := runExit(t, "drain", "--data-dir", filepath.Join(dir, "no-such-dir")); code == 0 || !strings.Contains(out, "no write-ahead log") {
		t.Fatalf("drain of a directory without a WAL: exit %d\n%s", code, out)
	}
}

// postLoginBatch posts n login attempts of user with ids user-0..n-1 and
// returns their ids once acknowledged.
func postLoginBatch(t *testing.T, s *server, user string, n int) []string {
	t.Helper()
	var body []byte
	var ids []string
	now := time.Now().UTC()
	for i := range n {
		id := fmt.Sprintf("%s-%d", user, i)
		ids = append(ids, id)
		body = fmt.Appendf(body, `{"user":%q,"success":false,"ts":%q,"id":%q}`+"\n", user, now.Add(time.Duration(i-n)*time.Millisecond).Format(time.RFC3339Nano), id)
	}
	if code, msg := s.post("/v1/logins", "application/x-ndjson", "", body); code != 202 {
		t.Fatalf("POST /v1/logins = %d %s", code, msg)
	}
	return ids
}

// checkLogins reads user's attempts with `ingest logins` and checks each
// id is there once.
func checkLogins(t *testing.T, dir string, storageArgs []string, user string, ids []string) {
	t.Helper()
	out, err := run(append([]string{"logins", user, "--data-dir", dir, "--limit", "1000", "--format", "ndjson"}, storageArgs...)...)
	if err != nil {
		t.Fatalf("ingest logins: %v\n%s", err, out)
	}
	checkExactlyOnce(t, ids, countIDs(string(out)))
}

// checkStatsCount checks that `ingest stats` counts want events of
// service at 16:00 on 2026-11-21 (the hour of events()).
func checkStatsCount(t *testing.T, storageArgs []string, service string, want int) {
	t.Helper()
	out, err := run(append([]string{"stats", service, "--day", "2026-11-21"}, storageArgs...)...)
	if err != nil {
		t.Fatalf("ingest stats: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^\s*16:00\s+(\d+)\s`).FindSubmatch(out)
	if m == nil || string(m[1]) != strconv.Itoa(want) {
		t.Fatalf("ingest stats counts %q events at 16:00, want %d:\n%s", m, want, out)
	}
}
