package buffer

import (
	"bytes"

	"ingest/logline"
)

// Group is the encoded lines of one key in a batch.
type Group struct {
	Stream Stream
	Key    []byte
	Data   []byte
	Events int
	// Lines summarizes Data's lines when the producer kept it as it wrote
	// them (the logs stream does); zero otherwise. The buffer merges the
	// summaries of a chunk's groups and hands them to the Flusher, so the
	// sink need not read the lines back for them.
	Lines logline.Summary
}

// Batch is what one request adds: its events grouped per key. Reuse it
// (Reset) to keep the hot path free of allocations.
type Batch struct {
	groups []Group
	last   int // index of the group found last: events of a batch mostly share a key
}

// Group returns the batch's group for (stream, key), adding it if needed.
// The returned pointer is valid until the next call.
func (b *Batch) Group(stream Stream, key []byte) *Group {
	if b.last < len(b.groups) {
		if g := &b.groups[b.last]; g.Stream == stream && bytes.Equal(g.Key, key) {
			return g
		}
	}
	for i := range b.groups {
		if g := &b.groups[i]; g.Stream == stream && bytes.Equal(g.Key, key) {
			b.last = i
			return g
		}
	}
	b.last = b.Add(stream, key)
	return &b.groups[b.last]
}

// Add adds an empty group for (stream, key), which the batch must not hold
// yet, and returns its index in Groups. It reuses the memory of a group a
// previous batch held.
func (b *Batch) Add(stream Stream, key []byte) int {
	if len(b.groups) < cap(b.groups) {
		b.groups = b.groups[:len(b.groups)+1]
	} else {
		b.groups = append(b.groups, Group{})
	}
	g := &b.groups[len(b.groups)-1]
	g.Stream = stream
	g.Key = append(g.Key[:0], key...)
	g.Data = g.Data[:0]
	g.Events = 0
	g.Lines = logline.Summary{}
	return len(b.groups) - 1
}

// Groups are the batch's groups.
func (b *Batch) Groups() []Group { return b.groups }

// Bytes is the encoded size of every group's data.
func (b *Batch) Bytes() int {
	n := 0
	for i := range b.groups {
		n += len(b.groups[i].Data)
	}
	return n
}

// Reset empties the batch, keeping at most retain bytes of its groups'
// line buffers for the next batch (the first ones, each at most 8 MiB).
func (b *Batch) Reset(retain int) {
	kept := 0
	all := b.groups[:cap(b.groups)]
	for i := range all {
		g := &all[i]
		if c := cap(g.Data); c > 8<<20 || kept+c > retain {
			g.Data = nil
		} else {
			kept += c
		}
	}
	b.groups = b.groups[:0]
	b.last = 0
}
