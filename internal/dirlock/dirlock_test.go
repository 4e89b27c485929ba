package dirlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockIsExclusiveAndDiesWithItsProcess: a second Lock of the same
// directory is refused naming the holder, until the first is released;
// a lock held by a process that is killed is free again.
func TestLockIsExclusiveAndDiesWithItsProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	release, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Lock = %v, want ErrHeld naming pid %d", err, os.Getpid())
	}
	release()
	again, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()

	// A process holding the lock (flock(1) on the same file) is killed:
	// its lock goes with it.
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) to hold the lock from another process")
	}
	// -F: flock becomes the command, so the lock is held by one process.
	cmd := exec.Command(flock, "-F", filepath.Join(dir, FileName), "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	held := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		r, err := Lock(dir)
		if err != nil {
			held = errors.Is(err, ErrHeld)
			break
		}
		r()
	}
	if !held {
		t.Fatal("a lock held by another process was not seen")
	}
	cmd.Process.Kill()
	cmd.Wait()
	r, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	r()
}
