package pagecache

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident reports, per page of f's first n bytes, whether it is cached.
func resident(t *testing.T, f *os.File, n int) []bool {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (n+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 == 1
	}
	return out
}

func TestDropFreesWholeSyncedPagesAndKeepsThePartialLast(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temp dir is on tmpfs, whose pages are the file itself and cannot be dropped")
	}
	page := os.Getpagesize()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 16*page + page/2 // the last page is partly written
	if _, err := f.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if r := resident(t, f, n); !r[0] || !r[15] {
		t.Fatalf("pages just written are not cached (%v): the check below would prove nothing", r)
	}
	Drop(f, 0, int64(n))
	r := resident(t, f, n)
	for i := 0; i < 16; i++ {
		if r[i] {
			t.Errorf("page %d is still cached after Drop", i)
		}
	}
	if !r[16] {
		t.Error("the partly written last page was dropped: the next append would read it back from disk")
	}
}
