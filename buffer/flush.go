package buffer

import (
	"time"

	"ingest/logline"
)

// evictAfter is how long an empty key buffer is kept before it is dropped.
const evictAfter = 2 * time.Minute

// scheduler queues keys whose oldest byte is older than --flush-interval,
// evicts idle keys and lets the WAL drop segments that are all stored.
func (b *Buffer) scheduler() {
	defer b.schedWG.Done()
	tick := min(b.cfg.FlushInterval/4, 250*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastTruncate := time.Now()
	for {
		select {
		case <-b.stop.Done():
			return
		case now := <-t.C:
			b.schedule(now)
			if b.wal != nil && now.Sub(lastTruncate) >= time.Second {
				b.truncateWAL()
				lastTruncate = now
			}
		}
	}
}

func (b *Buffer) schedule(now time.Time) {
	keys := 0
	for i := range b.stripes {
		st := &b.stripes[i]
		var evict []string
		st.mu.RLock()
		for full, kb := range st.keys {
			kb.mu.Lock()
			due := !kb.queued && !kb.flushing && b.due(kb, now)
			if due {
				kb.queued = true
			}
			idle := len(kb.chunks) == 0 && !kb.flushing && !kb.queued && now.Sub(kb.lastActive) > evictAfter
			kb.mu.Unlock()
			if due {
				b.enqueue(kb)
			}
			if idle {
				evict = append(evict, full)
			}
		}
		keys += len(st.keys)
		st.mu.RUnlock()
		if len(evict) > 0 {
			st.mu.Lock()
			for _, full := range evict {
				kb := st.keys[full]
				kb.mu.Lock()
				if len(kb.chunks) == 0 && !kb.flushing && !kb.queued {
					delete(st.keys, full)
				}
				kb.mu.Unlock()
			}
			st.mu.Unlock()
		}
	}
	b.met.keys.Set(float64(keys))
}

// truncateWAL deletes the WAL segments whose records are all stored: every
// segment before the one holding the oldest byte not yet flushed.
func (b *Buffer) truncateWAL() {
	// Only records already in the key buffers may go: one written but not
	// yet applied is held by nothing else.
	keep := b.wal.AppliedLSN()
	b.forEach(func(kb *keyBuf) {
		kb.mu.Lock()
		if kb.flushing && kb.flushFrom < keep {
			keep = kb.flushFrom
		}
		if len(kb.chunks) > 0 && kb.chunks[0].firstLSN < keep {
			keep = kb.chunks[0].firstLSN
		}
		kb.mu.Unlock()
	})
	if n, err := b.wal.Truncate(keep); err != nil {
		b.log.Warn("cannot delete write-ahead log segments", "err", err)
	} else if n > 0 {
		b.met.walSegmentsRemoved.Add(float64(n))
	}
	b.met.walSegments.Set(float64(b.wal.Segments()))
}

func (b *Buffer) worker(s *stream) {
	defer b.workersWG.Done()
	for kb := range s.queue {
		b.flushKey(s, kb)
	}
}

// flushKey hands a key's oldest chunks to its sink, retrying with backoff
// until they are stored or the buffer stops.
func (b *Buffer) flushKey(s *stream, kb *keyBuf) {
	kb.mu.Lock()
	kb.queued = false
	if kb.flushing || len(kb.chunks) == 0 {
		kb.mu.Unlock()
		return
	}
	r := kb.take(b.joinBytes(s))
	kb.flushFrom = r.first
	kb.flushing = true
	kb.mu.Unlock()

	stored := 0
	journal := func(intent []byte) error {
		if b.wal == nil {
			return nil
		}
		_, err := b.wal.Append(encodeIntent(kb.stream, kb.key, r.first, r.upTo, r.skip+stored, intent), nil)
		return err
	}
	start := time.Now()
	attempt := 1
	for ; ; attempt++ {
		data, lines, sums := after(r, stored)
		// b.stop ends when Close gives up at its deadline: a flush stuck on
		// a storage that does not answer is cancelled, not waited for.
		n, err := s.Flusher.Flush(b.stop, FlushRequest{Key: kb.key, Data: data, Summaries: lines, Sums: sums, Journal: journal})
		stored += n
		if err == nil && stored >= r.size {
			break
		}
		if err == nil {
			err = errShortFlush
		}
		b.lastFlushErr.Store(&err)
		b.met.flushErrors.WithLabelValues(s.Name).Inc()
		b.noteFlushFailure(attempt)
		if s.retry.Wait(b.stop, attempt, err, "key", kb.key, "stored", stored, "of", r.size) != nil {
			// Shutting down with storage unreachable: the bytes stay in the
			// WAL (with --ack wal or flush) and are stored when it is next
			// opened.
			b.log.Error("giving up flushing at shutdown", "key", kb.key, "unstored_bytes", r.size-stored)
			b.noteFlushEnd(attempt)
			return
		}
	}
	b.noteFlushEnd(attempt - 1)
	took := time.Since(start)
	if attempt == 1 {
		s.noteRate(r.size, took)
	}
	b.met.flushes.WithLabelValues(s.Name).Inc()
	b.met.flushBytes.WithLabelValues(s.Name).Add(float64(r.size))
	b.met.flushSeconds.WithLabelValues(s.Name).Observe(took.Seconds())
	b.appendDone(kb, r.upTo)

	kb.mu.Lock()
	kb.flushing = false
	kb.flushFrom = 0
	kb.flushedLSN = r.upTo
	requeue := !kb.queued && b.due(kb, time.Now())
	if requeue {
		kb.queued = true
	}
	kb.mu.Unlock()
	for _, buf := range r.data {
		s.recycle(buf)
	}
	b.budget.Release(int64(r.size))
	b.flushed.Broadcast()
	if requeue {
		b.enqueue(kb)
	}
}

// joinIdle is how long the buffer goes without a batch before its
// flushes join chunks.
const joinIdle = 250 * time.Millisecond

// joinSpan is how long a joined flush should take at the rate the
// stream's flushes last stored at: a third of a storage request's default
// timeout (15 s), so a slower link gets smaller joins rather than appends
// that time out and are retried whole.
const joinSpan = 5 * time.Second

// joinBytes is the most a flush of the stream takes now. While batches
// come, one chunk. Once none has come for joinIdle (the buffer is
// draining), what the stream's last measured flush would have stored in
// joinSpan, at least one chunk and at most FlushJoin of them (one until a
// flush was measured). A joined flush gives its chunks' memory back in
// one step once its one write lands: under load, with --buffer-bytes
// full, requests waiting for memory were refused meanwhile (p99 under
// load on Azurite 110 ms -> 1.1 s), while draining nobody waits.
func (b *Buffer) joinBytes(s *stream) int64 {
	if s.FlushJoin <= 1 || time.Since(time.Unix(0, b.lastAdd.Load())) < joinIdle {
		return s.FlushBytes
	}
	span := int64(float64(s.rate.Load()) * joinSpan.Seconds())
	return min(int64(s.FlushJoin)*s.FlushBytes, max(s.FlushBytes, span))
}

// appendDone marks a flush of kb up to LSN upTo done in the WAL. The flush
// need not wait for the record (after a crash without it, recovery asks
// the sink); Close does.
func (b *Buffer) appendDone(kb *keyBuf, upTo uint64) {
	if b.wal == nil {
		return
	}
	done := encodeDone(kb.stream, kb.key, upTo)
	b.doneWG.Go(func() {
		if b.beforeDone != nil {
			b.beforeDone()
		}
		b.wal.Append(done, nil)
	})
}

// noteRate records the rate of a flush of size bytes that took d, stored
// at its first attempt, for joinBytes.
func (s *stream) noteRate(size int, d time.Duration) {
	if d > 0 {
		s.rate.Store(int64(float64(size) / d.Seconds()))
	}
}

// run is what one flush takes: consecutive chunks of a key, as pieces.
type run struct {
	data        [][]byte          // the chunks' buffers, oldest first
	lines       []logline.Summary // what each holds, where known (chunk.lines)
	sums        []uint32          // their CRC-32Cs (chunk.sum)
	size        int               // their bytes in all
	first, upTo uint64            // LSNs of the first and last record
	skip        int               // bytes of record first stored before (see chunk.skip)
}

// take removes the key's oldest chunk and the ones after it while they
// add up to at most limit bytes, and returns them as one run. The caller
// holds kb.mu and knows a chunk is pending.
func (kb *keyBuf) take(limit int64) run {
	c := kb.chunks[0]
	r := run{first: c.firstLSN, skip: c.skip}
	n := 0
	for n < len(kb.chunks) && (n == 0 || int64(r.size+len(kb.chunks[n].data)) <= limit) {
		c = kb.chunks[n]
		r.data = append(r.data, c.data)
		var lines logline.Summary
		if c.linesOK {
			lines = c.lines
		}
		r.lines = append(r.lines, lines)
		r.sums = append(r.sums, c.sum)
		r.size += len(c.data)
		r.upTo = c.lastLSN
		kb.lastChunk = len(c.data)
		n++
	}
	clear(kb.chunks[:n])
	kb.chunks = kb.chunks[n:]
	return r
}

// after returns the run's pieces, their summaries and their sums without
// their first n bytes, leaving the run as it is. A piece cut short has
// neither summary nor sum.
func after(r run, n int) ([][]byte, []logline.Summary, []uint32) {
	pieces, lines, sums := r.data, r.lines, r.sums
	for len(pieces) > 0 && n >= len(pieces[0]) {
		n -= len(pieces[0])
		pieces, lines, sums = pieces[1:], lines[1:], sums[1:]
	}
	if n == 0 || len(pieces) == 0 {
		return pieces, lines, sums
	}
	return append([][]byte{pieces[0][n:]}, pieces[1:]...), append([]logline.Summary{{}}, lines[1:]...), append([]uint32{0}, sums[1:]...)
}

type shortFlushError struct{}

func (shortFlushError) Error() string {
	return "the sink stored only part of the data without an error"
}

var errShortFlush error = shortFlushError{}

// storageDownAfter is how many failed attempts in a row make a flush count
// as failing for StorageDown.
const storageDownAfter = 3

// noteFlushFailure records that attempt number attempt of a flush failed.
func (b *Buffer) noteFlushFailure(attempt int) {
	if attempt == storageDownAfter {
		b.failing.Add(1)
	}
}

// noteFlushEnd records the end of a flush after failures failed attempts.
func (b *Buffer) noteFlushEnd(failures int) {
	if failures >= storageDownAfter {
		b.failing.Add(-1)
	}
}

// StorageDown reports whether storage is known to be failing: some flush
// has failed storageDownAfter times in a row and is still being retried.
// Admission control may refuse work that must wait for a flush (--ack
// flush) while it is true.
func (b *Buffer) StorageDown() bool { return b.failing.Load() > 0 }
