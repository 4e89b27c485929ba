// Package pagecache lets writers of write-once data give its pages back
// to the kernel once the data is durable.
//
// Why: a buffered write copies into page cache pages. Written pages that
// stay cached push the kernel to take fresh free memory for the next
// write, and on a virtual machine the first touch of such memory is far
// costlier than the copy itself (measured here: 1 GiB in 4 MiB pwrite +
// fsync costs 0.8-3.0 CPU-s with the pages left cached, 0.3 CPU-s when
// each block's pages are dropped after its fsync, so the next block
// reuses them). The write-ahead log is read back only at start-up and
// stored blocks only by queries, so neither needs them cached.
package pagecache

import (
	"os"

	"golang.org/x/sys/unix"
)

var pageSize = int64(os.Getpagesize())

// Drop tells the kernel that the n bytes of f from off, already written
// and synced, will not be read soon: their clean pages are freed. Pages
// only partly in the range stay cached, the file's last one too (the
// kernel would drop a partial page at the end of the file, and the next
// append would read it back from disk first). It is advice: errors are
// ignored, and an unsynced page is simply not dropped.
func Drop(f *os.File, off, n int64) {
	end := (off + n) / pageSize * pageSize
	if end <= off {
		return
	}
	_ = unix.Fadvise(int(f.Fd()), off, end-off, unix.FADV_DONTNEED)
}
