// Package dirlock holds a data directory for one process: an exclusive
// flock(2) on the file "ingest.lock" in it, taken by `ingest serve` and
// `ingest drain` for as long as they run. The kernel releases it when the
// process ends, crash included, so unlike a run file a lock left by a dead
// process never refuses anyone.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file inside the directory.
const FileName = "ingest.lock"

// ErrHeld is wrapped by Lock's error when another process holds the
// directory.
var ErrHeld = errors.New("another process holds the directory")

// Lock takes dir (creating it if needed) for this process and returns the
// function that gives it back. The lock file records the holder's pid, for
// the message another process gets.
func Lock(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the lock file: %w", err)
	}
	if err := lockFile(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w (%s, pid %s)", ErrHeld, path, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}
