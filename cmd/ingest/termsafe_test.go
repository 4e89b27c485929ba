package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ingest/internal/ingestexec"
)

// TestCommandsEscapeTerminalControls stores a login attempt whose user
// agent and IP carry terminal escapes and an event whose message and
// attribute carry a C1 control, then runs the commands that print them: a
// table never passes them to the terminal, whether asked of the running
// server or read from the data directory; line output escapes them on a
// terminal and keeps the exact bytes through a pipe.
func TestCommandsEscapeTerminalControls(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir)
	login := `{"user":"mallory","success":false,"ip":"203.0.113.9\u001b[31m","ua":"\u001b[2J\u001b]0;owned\u0007","id":"esc1"}`
	if code, b := s.post("/v1/logins", "application/x-ndjson", "", []byte(login)); code != 202 {
		t.Fatalf("POST login = %d %s", code, b)
	}
	event := `{"ts":"2026-11-21T16:00:00Z","service":"api","id":"c1","msg":"a\u009b2Jb","x":"\u009b31m"}`
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", []byte(event)); code != 202 {
		t.Fatalf("POST event = %d %s", code, b)
	}
	s.waitDrained()

	checkTable := func(how string) {
		t.Helper()
		out, err := run("logins", "mallory", "--data-dir", dir)
		if err != nil {
			t.Fatalf("ingest logins (%s): %v\n%s", how, err, out)
		}
		if bytes.IndexByte(out, 0x1b) >= 0 || bytes.IndexByte(out, 0x07) >= 0 {
			t.Fatalf("ingest logins (%s) printed terminal controls:\n%q", how, out)
		}
		if !bytes.Contains(out, []byte(`\x1b[2J\x1b]0;owned\x07`)) || !bytes.Contains(out, []byte(`203.0.113.9\x1b[31m`)) {
			t.Fatalf("ingest logins (%s) does not show the escaped user agent and IP:\n%s", how, out)
		}
	}
	checkTable("asking the running server")

	query := []string{"query", "--data-dir", dir, "--service", "api", "--from", "2026-11-21T16:00:00Z", "--to", "2026-11-21T17:00:00Z"}
	blob := "api/2026/11/21/1600/000001.log"
	for _, args := range [][]string{query, append(query, "--format", "ndjson"), {"cat", "--data-dir", dir, blob}} {
		piped, err := run(args...)
		if err != nil {
			t.Fatalf("ingest %s: %v\n%s", strings.Join(args, " "), err, piped)
		}
		if !bytes.Contains(piped, []byte("\u009b")) {
			t.Fatalf("ingest %s through a pipe: want the stored bytes as they are, got %q", args[0], piped)
		}
		onTTY := runOnTerminal(t, args...)
		if bytes.Contains(onTTY, []byte("\u009b")) || !bytes.Contains(onTTY, []byte(`\u009b`)) {
			t.Fatalf("ingest %s on a terminal: want the C1 control escaped, got %q", args[0], onTTY)
		}
	}

	if code := s.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	checkTable("reading the data directory")
}

// runOnTerminal runs an ingest command with its standard output on a new
// pseudo-terminal and returns what it printed there.
func runOnTerminal(t *testing.T, args ...string) []byte {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("cannot open a pseudo-terminal: %v", err)
	}
	defer ptm.Close()
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Raw: no line-end translation, no echo.
	tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO | unix.ICANON
	if err := unix.IoctlSetTermios(int(pts.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	cmd := ingestexec.Command(binary, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pts, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close() // the child holds it; EOF (EIO) on ptm once it exits
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, ptm); close(done) }()
	werr := cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pseudo-terminal did not close after the command exited")
	}
	if werr != nil {
		t.Fatalf("ingest %s on a terminal: %v\n%s", strings.Join(args, " "), werr, stderr.String())
	}
	return out.Bytes()
}
