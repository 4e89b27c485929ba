package blobsink

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"ingest/internal/disk"
)

// A FileStore blob's metadata lives in a sidecar file, ".NAME.meta", of two
// slots written in turn. A write overwrites the older slot in place and
// fsyncs the file: durable once it returns, with no file created or renamed
// (no directory entry to make durable as well). A slot holds a header
// (magic, generation, length, CRC-32C) and the metadata as JSON; a reader
// takes the valid slot of the higher generation, so a write torn by a
// crash leaves the previous metadata. Sidecars of plain JSON (written
// before the slots) are read as they are and replaced whole on the next
// write.
const (
	metaSlotBytes  = 4 << 10 // a page each: a torn page leaves the other slot whole
	metaHeaderSize = 20
)

// metaBufs holds the buffers a sidecar is read into.
var metaBufs = sync.Pool{New: func() any { return new([2 * metaSlotBytes]byte) }}

var metaMagic = [4]byte{'i', 'm', 'd', '1'}

func metaPath(p string) string {
	return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".meta")
}

// metaSlot is one slot's bytes: header and JSON. Azure allows 8 KiB of
// metadata in all; ours is a few hundred bytes, and a slot holds 4 KiB.
func metaSlot(gen uint64, js []byte) []byte {
	b := make([]byte, metaHeaderSize, metaHeaderSize+len(js))
	copy(b, metaMagic[:])
	binary.LittleEndian.PutUint64(b[4:], gen)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(js)))
	b = append(b, js...)
	sum := crc32.Update(crc32.Checksum(b[:16], disk.Castagnoli), disk.Castagnoli, js)
	binary.LittleEndian.PutUint32(b[16:], sum)
	return b
}

// parseSlot returns a slot's generation and JSON; ok is false when the
// slot is empty or torn.
func parseSlot(b []byte) (gen uint64, js []byte, ok bool) {
	if len(b) < metaHeaderSize || !bytes.Equal(b[:4], metaMagic[:]) {
		return 0, nil, false
	}
	gen = binary.LittleEndian.Uint64(b[4:])
	n := int(binary.LittleEndian.Uint32(b[12:]))
	if n > len(b)-metaHeaderSize {
		return 0, nil, false
	}
	js = b[metaHeaderSize : metaHeaderSize+n]
	if crc32.Update(crc32.Checksum(b[:16], disk.Castagnoli), disk.Castagnoli, js) != binary.LittleEndian.Uint32(b[16:]) {
		return 0, nil, false
	}
	return gen, js, true
}

// currentMeta reads a sidecar into buf and returns its newest valid
// metadata as JSON (in buf), with its generation and the slot it is in
// (-1: none); legacy is true for a plain JSON sidecar. A slot that begins
// like one but does not check out may be being written: it is read again
// (a few times), lest an older slot be taken for the newest.
func currentMeta(f io.ReaderAt, buf *[2 * metaSlotBytes]byte) (gen uint64, slot int, js []byte, legacy bool, err error) {
	for try := 0; ; try++ {
		n, err := f.ReadAt(buf[:], 0)
		if err != nil && err != io.EOF {
			return 0, 0, nil, false, err
		}
		b := buf[:n]
		if len(b) > 0 && b[0] == '{' {
			return 0, 0, b, true, nil
		}
		gen, slot, js = 0, -1, nil
		torn := false
		for i := range 2 {
			if i*metaSlotBytes >= len(b) {
				break
			}
			sb := b[i*metaSlotBytes : min(len(b), (i+1)*metaSlotBytes)]
			g, j, ok := parseSlot(sb)
			torn = torn || !ok && bytes.HasPrefix(sb, metaMagic[:])
			if ok && (slot < 0 || g > gen) {
				gen, slot, js = g, i, j
			}
		}
		if !torn || try == 2 {
			return gen, slot, js, false, nil
		}
	}
}

// writeMeta makes meta the blob's metadata, durably, except that a sidecar
// it creates (created) is durable once the caller syncs its directory.
func writeMeta(p string, meta map[string]string) (created bool, err error) {
	js, err := json.Marshal(meta)
	if err != nil {
		return false, err
	}
	if len(js) > metaSlotBytes-metaHeaderSize {
		return false, fmt.Errorf("cannot set metadata of %s: %d bytes, more than the %d allowed", p, len(js), metaSlotBytes-metaHeaderSize)
	}
	mp := metaPath(p)
	f, err := os.OpenFile(mp, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return true, createMeta(mp, js)
	}
	if err != nil {
		return false, err
	}
	buf := metaBufs.Get().(*[2 * metaSlotBytes]byte)
	defer metaBufs.Put(buf)
	gen, slot, _, legacy, err := currentMeta(f, buf)
	if err == nil && !legacy {
		// The slot not holding the newest metadata: a torn write there
		// leaves the newest as it is.
		next := 0
		if slot == 0 {
			next = 1
		}
		if _, err = f.WriteAt(metaSlot(gen+1, js), int64(next*metaSlotBytes)); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && legacy {
		err = replaceMeta(mp, js)
	}
	return false, err
}

// createMeta makes a new sidecar holding js in its first slot.
func createMeta(mp string, js []byte) error {
	f, err := os.OpenFile(mp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(metaSlot(1, js)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// replaceMeta replaces a legacy sidecar whole: a new one beside it, renamed
// over it, the directory synced.
func replaceMeta(mp string, js []byte) error {
	tmp := filepath.Join(filepath.Dir(mp), ".tmp-"+filepath.Base(mp))
	os.Remove(tmp)
	if err := createMeta(tmp, js); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, mp); err != nil {
		os.Remove(tmp)
		return err
	}
	return disk.SyncDir(filepath.Dir(mp))
}

// readMeta reads a blob's metadata; empty when it has none (or none that
// can be read).
func readMeta(p string) map[string]string {
	f, err := os.Open(metaPath(p))
	if err != nil {
		return map[string]string{}
	}
	defer f.Close()
	buf := metaBufs.Get().(*[2 * metaSlotBytes]byte)
	defer metaBufs.Put(buf)
	_, _, js, _, err := currentMeta(f, buf)
	var m map[string]string
	if err != nil || js == nil || json.Unmarshal(js, &m) != nil {
		return map[string]string{}
	}
	return m
}
