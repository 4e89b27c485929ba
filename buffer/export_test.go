package buffer

// kill stops the buffer the way a crash would: no flush, no done records.
func (b *Buffer) kill() {
	b.closing.Store(true)
	b.halt()
	if b.wal != nil {
		b.wal.Close()
	}
}

// events is the number of events in the batch.
func (b *Batch) events() int {
	n := 0
	for i := range b.groups {
		n += b.groups[i].Events
	}
	return n
}

// streamsOf registers one stream per flusher, in order: stream 0 is
// "logs", stream 1 "logins".
func streamsOf(flushers ...Flusher) []StreamDef {
	names := []string{"logs", "logins"}
	defs := make([]StreamDef, len(flushers))
	for i, f := range flushers {
		defs[i] = StreamDef{ID: Stream(i), Name: names[i], Flusher: f, Checksums: true}
	}
	return defs
}
