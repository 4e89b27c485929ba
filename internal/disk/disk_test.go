package disk

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatalf("SyncDir(%s) = %v", dir, err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}

// TestCastagnoli: the table is CRC-32C's (the check value of "123456789"
// is 0xE3069283 in RFC 3720), not IEEE's.
func TestCastagnoli(t *testing.T) {
	if got := crc32.Checksum([]byte("123456789"), Castagnoli); got != 0xE3069283 {
		t.Fatalf("CRC-32C of 123456789 = %#x, want 0xe3069283", got)
	}
}
