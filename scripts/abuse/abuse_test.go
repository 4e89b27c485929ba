package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ingest/internal/ingestexec"
)

// TestMemoryAttacks runs every memory attack against the real binary with
// its default flags, once by one client and once by 24 at once, each
// against a fresh server, and asserts the server's peak RSS (VmHWM) stayed
// under maxPeakRSS, and the attack's own check. A new attack is a row of
// memoryAttacks. INGEST_TEST_ABUSE_BINARY runs another build instead (the
// figures of an older version).
func TestMemoryAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per attack and sends hundreds of MiB")
	}
	dir := t.TempDir()
	bin := os.Getenv("INGEST_TEST_ABUSE_BINARY")
	if bin == "" {
		var err error
		if bin, err = ingestexec.Build(dir, false); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range memoryAttacks {
		var reqs []attackRequest
		if a.requests != nil {
			reqs = a.requests()
		}
		for _, n := range attackClients {
			t.Run(fmt.Sprintf("%s/%d", a.name, n), func(t *testing.T) {
				res, err := runAttack(bin, filepath.Join(dir, fmt.Sprintf("data-%d-%d", i, n)), a, reqs, n)
				t.Logf("%s: %s", a.name, res)
				if err != nil {
					t.Fatal(err)
				}
				if res.peak == 0 || res.peak > maxPeakRSS {
					t.Errorf("%s with %d client(s): peak RSS %d MiB, want under %d MiB", a.name, n, res.peak>>20, maxPeakRSS>>20)
				}
				if res.err != nil {
					t.Errorf("%s with %d client(s): %v", a.name, n, res.err)
				}
			})
		}
	}
}

// TestReplays runs the quick replay sections (crashes, tokens, defaults)
// against the real binary and fails on every attack it does not withstand;
// tail-readers takes --duration and stays out of the suite.
// INGEST_TEST_ABUSE_BINARY runs another build instead.
func TestReplays(t *testing.T) {
	bin := os.Getenv("INGEST_TEST_ABUSE_BINARY")
	if bin == "" {
		var err error
		if bin, err = ingestexec.Build(t.TempDir(), false); err != nil {
			t.Fatal(err)
		}
	}
	for _, rp := range replays {
		if rp.name == "tail-readers" {
			continue
		}
		t.Run(rp.name, func(t *testing.T) {
			verdicts := 0
			r := &runner{o: options{maxRequestCPU: 2 * time.Second, maxRSS: maxPeakRSS}, bin: bin, dir: t.TempDir(),
				report: func(v verdict) {
					verdicts++
					if v.ok {
						t.Log(v)
					} else {
						t.Error(v)
					}
				}}
			ok := r.runReplay(rp)
			if verdicts == 0 || !ok && !t.Failed() {
				t.Errorf("%s: %d verdicts, passed %v", rp.name, verdicts, ok)
			}
		})
	}
}
