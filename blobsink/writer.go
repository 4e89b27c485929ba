package blobsink

import (
	"fmt"
	"time"
)

// writerState is where a blob writer is in its life cycle:
//
//	claimed --append--> appending --full or idle--> retired
//	   |                    |
//	   +--------------------+--changed behind our back, or vanished--> abandoned
//
// Only claimed and appending writers take appends. Retired and abandoned
// are final: the key's next flush claims the next blob number. A writer is
// abandoned when its blob no longer is what the writer wrote (another
// writer appended, the file was touched or truncated) or is gone; appending
// to it again could only fail, so keeping it would wedge its key forever.
type writerState uint8

const (
	writerClaimed writerState = iota
	writerAppending
	writerRetired
	writerAbandoned
)

func (s writerState) String() string {
	switch s {
	case writerClaimed:
		return "claimed"
	case writerAppending:
		return "appending"
	case writerRetired:
		return "retired"
	case writerAbandoned:
		return "abandoned"
	}
	return fmt.Sprintf("writerState(%d)", uint8(s))
}

// writer is one blob a key appends to. Its fields belong to the key's
// flush (a key's flushes never overlap), except used and evictable.
type writer struct {
	name     string
	seq      int
	size     int64 // bytes appended by this writer (the blob's size, as far as it knows)
	blocks   int
	meta     Meta // of everything appended so far
	metaSent bool // meta is what the store holds
	// ahead is what the store holds while aheadSet: meta with the blocks
	// being appended, sent before them (widenMeta). When they all land,
	// meta catches up with it and no second metadata write is needed.
	ahead    Meta
	aheadSet bool
	state    writerState
	why      string // why it was abandoned
	counted  int64  // meta.Count as the sink's Counter was last told

	// Read by other keys' flushes (eviction), so written only under Sink.mu.
	used      time.Time
	evictable bool // metaSent as of the last flush: nothing left to write
}

// newWriter is a writer for a blob just created empty (claimed).
func newWriter(name string, seq int) *writer {
	return &writer{name: name, seq: seq, metaSent: true, used: time.Now()}
}

// open reports whether the writer may still be appended to.
func (w *writer) open() bool { return w.state == writerClaimed || w.state == writerAppending }

// appended records a block of size bytes with metadata m that landed.
func (w *writer) appended(size int, m Meta) {
	w.size += int64(size)
	w.blocks++
	w.meta = w.meta.Merge(m)
	w.metaSent = false
	if w.state == writerClaimed {
		w.state = writerAppending
	}
}

// retire closes an open writer for good: its blob is full, or its key idle.
func (w *writer) retire() {
	if w.open() {
		w.state = writerRetired
	}
}

// abandon gives the writer up for good: why says what changed its blob.
func (w *writer) abandon(why string) {
	w.state, w.why = writerAbandoned, why
}

// fits reports whether a block of n bytes may go into this writer's blob
// whose planned size is offset after blocks blocks: an empty blob takes
// any block (a block is never larger than --blob-max-bytes, unless a single
// line is).
func fits(cfg *Config, offset int64, blocks, n int) bool {
	return blocks == 0 || (offset+int64(n) <= cfg.MaxBlobBytes && blocks+1 <= cfg.MaxBlocks)
}
