//go:build !unix

package dirlock

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("locked")

// lockFile does nothing where flock(2) does not exist: the directory is
// not protected there.
func lockFile(*os.File) error { return nil }
