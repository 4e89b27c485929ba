package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"ingest/internal/azurite"
)

// TestStatsExactlyOnceAcrossKill9: kill -9 twice under load on Azure
// storage, restarting on the same data directory each time; `ingest stats`
// then counts exactly the events the blobs hold (counts are written with
// each flush, keyed to its blob, so a replay neither loses nor repeats
// them), and those are every acknowledged event once.
func TestStatsExactlyOnceAcrossKill9(t *testing.T) {
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("crashstats%d", time.Now().UnixNano()%1e9)
	dir := t.TempDir()
	args := []string{"--storage", conn, "--container", container, "--flush-interval", "30ms", "--flush-bytes", "64KiB",
		"--stats-instance", "crash-" + container}
	var acked []string
	for round := range 2 {
		s := start(t, dir, args...)
		stop := make(chan struct{})
		wait := hammer(s, container, "h1", fmt.Sprintf("r%d", round), 4, 100, stop)
		time.Sleep(1500 * time.Millisecond)
		s.kill9()
		close(stop)
		acked = append(acked, wait()...)
	}
	s := start(t, dir, args...)
	s.waitDrained()
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	stored, _ := readIDs(t, azureStore(t, conn, container), container+"/")
	checkExactlyOnce(t, acked, stored)
	lines := 0
	for _, n := range stored {
		lines += n
	}
	out, err := run("stats", container, "--day", "2026-11-21", "--storage", conn, "--container", container)
	if err != nil {
		t.Fatalf("ingest stats: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^\s*16:00\s+(\d+)\s+0\s+0\s+(\d+)\s+0\s+0\s+0\s*$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("ingest stats has no 16:00 row of info events only:\n%s", out)
	}
	total, _ := strconv.Atoi(string(m[1]))
	info, _ := strconv.Atoi(string(m[2]))
	t.Logf("blobs hold %d events; ingest stats counts %d (info %d) after two kill -9s", lines, total, info)
	if total != lines || info != lines {
		t.Fatalf("ingest stats counts %d events (info %d) for 16:00, the blobs hold %d", total, info, lines)
	}
}
