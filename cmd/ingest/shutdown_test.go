package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"ingest/internal/azurite"
)

// pausable is an Azurite apart from the shared one, for the tests that
// freeze it (pausing the shared one would stall other tests' servers);
// they run one at a time and each uses containers of its own. TestMain
// stops it.
var pausable struct {
	once sync.Once
	az   *azurite.Server
	err  error
}

// pausedAzurite returns the pausable Azurite with a function that pauses it
// until the returned resume is called (or the test ends).
func pausedAzurite(t *testing.T) (az *azurite.Server, pause func() (resume func())) {
	t.Helper()
	azurite.Shared(t) // skip without Azurite (fail under CI)
	pausable.once.Do(func() { pausable.az, pausable.err = azurite.Start() })
	if pausable.err != nil {
		t.Fatal(pausable.err)
	}
	az = pausable.az
	return az, func() func() {
		if err := az.Pause(); err != nil {
			t.Fatal(err)
		}
		paused := true
		resume := func() {
			if paused {
				paused = false
				if err := az.Resume(); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(resume)
		return resume
	}
}

// TestShutdownTimeoutBoundsFlushesInFlight: with Azure storage frozen and a
// flush waiting on it (a storage request may take --storage-try-timeout,
// 15 s, three times over), SIGTERM exits within --shutdown-timeout, not
// when the flush gives up: the flush is cancelled, the exit code is not 0,
// the log says the rest stays in the write-ahead log, and the next start
// stores every acknowledged event exactly once.
func TestShutdownTimeoutBoundsFlushesInFlight(t *testing.T) {
	az, pause := pausedAzurite(t)
	dir := t.TempDir()
	const timeout = 3 * time.Second
	args := []string{"--storage", az.ConnString(), "--container", "bounded", "--flush-interval", "50ms",
		"--shutdown-timeout", timeout.String()}
	s := start(t, dir, args...)
	acked := postEvents(t, s, "bounded", "before", 50)
	s.waitDrained()
	resume := pause()
	acked = append(acked, postEvents(t, s, "bounded", "during", 50)...)
	time.Sleep(500 * time.Millisecond) // the flush of "during" is waiting on storage

	began := time.Now()
	code, err := s.Stop(2 * time.Minute)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d %v after SIGTERM with --shutdown-timeout %v and storage frozen", code, took.Round(10*time.Millisecond), timeout)
	// The bound is the flag plus the time to stop a process: a margin
	// for a loaded machine, far below the 45 s of a flush left to run.
	if took > timeout+7*time.Second {
		t.Errorf("exit %v after SIGTERM, want within --shutdown-timeout %v (plus a margin)", took, timeout)
	}
	if code == 0 || !strings.Contains(s.Stderr(), "stay in the write-ahead log") {
		t.Errorf("exit code %d, want non-zero and a log saying what is left stays in the write-ahead log:\n%s", code, s.Stderr())
	}

	resume()
	s2 := start(t, dir, args...)
	s2.waitDrained()
	if code := s2.stop(); code != 0 {
		t.Fatalf("exit code %d after a clean stop", code)
	}
	stored, _ := readIDs(t, azureStore(t, az.ConnString(), "bounded"), "bounded/")
	checkExactlyOnce(t, acked, stored)
}

// postEvents posts n events of service with ids prefix-0..n-1 and returns
// their ids once acknowledged.
func postEvents(t *testing.T, s *server, service, prefix string, n int) []string {
	t.Helper()
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", events(service, "h", prefix, n)); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return ids
}
