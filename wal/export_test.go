package wal

// nextLSNForTest is the LSN the next appended record gets.
func (l *Log) nextLSNForTest() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nextLSN
}
