package buffer

// kill stops the buffer the way a crash would: no flush, no done records.
func (b *Buffer) kill() {
	b.closing.Store(true)
	b.halt()
	if b.wal != nil {
		b.wal.Close()
	}
}
