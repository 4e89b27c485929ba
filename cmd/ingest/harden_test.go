package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLsStaysInDataDir: `ingest ls` with a prefix that climbs out of the
// blob folder is refused and lists nothing outside it.
func TestLsStaysInDataDir(t *testing.T) {
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join(dir, "blobs", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	// Exactly as many "../" as the root is deep: the names of /etc, as the
	// store would report them, start with the prefix.
	prefix := strings.Repeat("../", strings.Count(root, "/")) + "etc/pass"
	out, err := run("ls", "--data-dir", dir, prefix)
	if err == nil || strings.Contains(string(out), "passwd") || !strings.Contains(string(out), "cannot list blobs under") {
		t.Fatalf("ingest ls %s = %v:\n%s\nwant a refusal, nothing listed", prefix, err, out)
	}
}

// TestDataFilesArePrivate: after events and login attempts are stored,
// every file under a new --data-dir is readable by its user only and
// every folder is closed to others; a data directory left by an older
// version (0755 folders, 0644 files) is closed at start.
func TestDataFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := start(t, dir)
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", events("api", "h1", "p", 50)); code != 202 {
		t.Fatalf("POST logs = %d %s", code, b)
	}
	if code, b := s.post("/v1/logins", "application/x-ndjson", "", []byte(`{"user":"alice","ip":"203.0.113.9","success":false}`)); code != 202 {
		t.Fatalf("POST logins = %d %s", code, b)
	}
	s.waitDrained()
	checkPrivate := func(when string) (files int) {
		t.Helper()
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: %s is %v, want nothing for group and others", when, p, info.Mode().Perm())
			}
			if !d.IsDir() {
				files++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	// WAL segments, blob and sidecar, tables.db, server.json at least.
	if n := checkPrivate("while serving"); n < 5 {
		t.Fatalf("found %d files under %s, want the WAL, blobs, sidecars, tables and run file", n, dir)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// As an older version left it.
	for _, d := range []string{"wal", "blobs", "blobs/logs"} {
		if err := os.Chmod(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s = start(t, dir)
	for _, d := range []string{"wal", "blobs"} {
		if st, err := os.Stat(filepath.Join(dir, d)); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s after a restart: %v %v, want 0700", d, st.Mode().Perm(), err)
		}
	}
	if !strings.Contains(s.Stderr(), "data folder made private") {
		t.Errorf("no log line says the folders were closed:\n%s", s.Stderr())
	}
}
