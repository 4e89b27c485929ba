// Package disk holds what the write-ahead log and the embedded blob store
// share about bytes on disk: making a directory's entries durable, and the
// CRC-32C (Castagnoli) that checks their records and blocks.
package disk

import (
	"hash/crc32"
	"os"
)

// Castagnoli is the CRC-32C table: the polynomial with hardware support on
// amd64 and arm64, the one Azure Storage uses for its own checksums.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SyncDir makes dir's entries (files created, renamed or removed in it)
// durable: a file's own fsync does not cover its name.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
