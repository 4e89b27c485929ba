package main

import (
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
