package buffer

// kill stops the buffer the way a crash would: no flush, no done records.
func (b *Buffer) kill() {
	b.closing.Store(true)
	close(b.stop)
	if b.wal != nil {
		b.wal.Close()
	}
}
