package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"ingest/internal/ingestexec"
)

func TestFormatVersion(t *testing.T) {
	vcs := func(rev, when, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}}
	}
	f := func(version, commit string, bi *debug.BuildInfo, want string) {
		t.Helper()
		if got := formatVersion(version, commit, bi); got != want {
			t.Fatalf("formatVersion(%q, %q) = %q, want %q", version, commit, got, want)
		}
	}
	f("", "", nil, "ingest devel (commit unknown: built without VCS information; see -ldflags -X main.commit)")
	f("", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "ingest devel (commit unknown: built without VCS information; see -ldflags -X main.commit)")
	f("", "", vcs("abc123", "2026-11-23T12:00:00Z", "false"), "ingest devel (commit abc123, 2026-11-23T12:00:00Z)")
	f("", "", vcs("abc123", "2026-11-23T12:00:00Z", "true"), "ingest devel (commit abc123+modified, 2026-11-23T12:00:00Z)")
	f("v1.2.0", "", vcs("abc123", "2026-11-23T12:00:00Z", "false"), "ingest v1.2.0 (commit abc123, 2026-11-23T12:00:00Z)")
	f("v1.2.0", "def456", vcs("abc123", "2026-11-23T12:00:00Z", "true"), "ingest v1.2.0 (commit def456)")
	f("v1.2.0", "abc123", vcs("abc123", "2026-11-23T12:00:00Z", "false"), "ingest v1.2.0 (commit abc123, 2026-11-23T12:00:00Z)")
	f("", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "ingest v0.3.1 (commit unknown: built without VCS information; see -ldflags -X main.commit)")
}

// TestVersionFlag: the real binary, built as a release build would be,
// prints its version and commit with --version and with `version`.
func TestVersionFlag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ingest")
	ldflags := "-X main.version=v9.8.7 -X main.commit=0123456789abcdef0123456789abcdef01234567"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := ingestexec.Command(bin, args...).CombinedOutput()
		if err != nil || !regexp.MustCompile(`^ingest v9\.8\.7 \(commit 0123456789abcdef0123456789abcdef01234567\) go\d`).Match(out) {
			t.Fatalf("ingest %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The plain test binary says what it knows, never nothing.
	out, err := ingestexec.Command(binary, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ingest ") || !strings.Contains(string(out), "(commit ") {
		t.Fatalf("ingest --version: %v\n%s", err, out)
	}
}
