package buffer

import (
	"context"
	"fmt"
	"time"

	"ingest/logline"
	"ingest/wal"
)

// pendingKey is one key's bytes found in the WAL and not known to be stored.
type pendingKey struct {
	stream  Stream
	key     string
	records []pendingRecord
	intent  *pendingIntent // the last flush that started and did not finish
}

// pendingRecord is one WAL record's lines of a key.
type pendingRecord struct {
	lsn  uint64
	data []byte
	skip int // bytes cut from the front of the record's data: stored already
}

type pendingIntent struct {
	first  uint64 // LSN of the flush's first record; 0 for the old record type
	upTo   uint64
	stored int // bytes stored before this intent was written, from the start of record first (old type: of the flush)
	body   []byte
}

// dropBefore forgets the records before LSN first: a flush starting at
// first means every earlier byte of the key was stored.
func (p *pendingKey) dropBefore(first uint64) {
	i := 0
	for i < len(p.records) && p.records[i].lsn < first {
		i++
	}
	p.records = p.records[i:]
}

// dropThrough forgets the records up to and including LSN upTo.
func (p *pendingKey) dropThrough(upTo uint64) {
	i := 0
	for i < len(p.records) && p.records[i].lsn <= upTo {
		i++
	}
	p.records = p.records[i:]
}

// dropBytes forgets the first n bytes of the records up to LSN upTo.
func (p *pendingKey) dropBytes(n int, upTo uint64) {
	for n > 0 && len(p.records) > 0 && p.records[0].lsn <= upTo {
		c := &p.records[0]
		if n >= len(c.data) {
			n -= len(c.data)
			p.records = p.records[1:]
			continue
		}
		c.data = c.data[n:]
		c.skip += n
		n = 0
	}
}

// pendingKeys is what the WAL holds per key (stream and key), not known to
// be stored.
type pendingKeys map[string]*pendingKey

// get returns the key's entry, adding it if needed.
func (k pendingKeys) get(stream Stream, key []byte) *pendingKey {
	full := string(append([]byte{byte(stream)}, key...))
	p := k[full]
	if p == nil {
		p = &pendingKey{stream: stream, key: string(key)}
		k[full] = p
	}
	return p
}

// replay reads the WAL back and queues what it holds that is not stored:
// it collects every key's records and last unfinished flush, asks the sink
// what each unfinished flush stored, and requeues the rest.
func (b *Buffer) replay(ctx context.Context, l *wal.Log) error {
	start := time.Now()
	keys := pendingKeys{}
	records := 0
	err := l.Replay(func(lsn uint64, payload []byte) error {
		records++
		return b.readRecord(keys, lsn, payload)
	})
	if err != nil {
		return err
	}
	resolved, bytes, err := b.requeue(ctx, keys)
	if err != nil {
		return err
	}
	if records > 0 {
		b.log.Info("replayed the write-ahead log", "records", records, "keys", len(keys),
			"unfinished_flushes", resolved, "requeued_bytes", bytes, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// readRecord folds one WAL record into keys.
func (b *Buffer) readRecord(keys pendingKeys, lsn uint64, payload []byte) error {
	r := reader{b: payload}
	switch r.byte() {
	case recBatch:
		if err := b.readBatch(keys, lsn, &r); err != nil {
			return err
		}
	case recIntent:
		readIntent(keys, &r)
	case recFlush:
		readFlush(keys, &r)
	case recDone:
		readDone(keys, &r)
	default:
		r.err = errRecord
	}
	if r.err != nil {
		return fmt.Errorf("cannot replay the write-ahead log: record %d: %w", lsn, r.err)
	}
	return nil
}

// readBatch adds a batch record's groups to their keys' records.
func (b *Buffer) readBatch(keys pendingKeys, lsn uint64, r *reader) error {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		stream, key := r.key()
		data := r.bytes()
		if r.err != nil {
			return nil
		}
		if int(stream) >= len(b.streams) {
			return fmt.Errorf("cannot replay the write-ahead log: record %d names unknown stream %d", lsn, stream)
		}
		p := keys.get(stream, key)
		p.records = append(p.records, pendingRecord{lsn: lsn, data: append([]byte(nil), data...)})
	}
	return nil
}

// readIntent makes an intent record its key's unfinished flush.
func readIntent(keys pendingKeys, r *reader) {
	stream, key := r.key()
	upTo, stored := r.uvarint(), r.uvarint()
	body := r.b
	if r.err != nil {
		return
	}
	p := keys.get(stream, key)
	if p.intent != nil && p.intent.upTo < upTo {
		// A later flush started, so the earlier one had finished.
		p.dropThrough(p.intent.upTo)
	}
	p.intent = &pendingIntent{upTo: upTo, stored: int(stored), body: append([]byte(nil), body...)}
}

// readFlush makes a flush record its key's unfinished flush. A later one
// replaces an earlier one: the earlier flush either finished or was resumed
// by this one, which says where it starts.
func readFlush(keys pendingKeys, r *reader) {
	stream, key := r.key()
	first, upTo, stored := r.uvarint(), r.uvarint(), r.uvarint()
	body := r.b
	if r.err != nil {
		return
	}
	p := keys.get(stream, key)
	p.intent = &pendingIntent{first: first, upTo: upTo, stored: int(stored), body: append([]byte(nil), body...)}
}

// readDone forgets what a finished flush stored.
func readDone(keys pendingKeys, r *reader) {
	stream, key := r.key()
	upTo := r.uvarint()
	if r.err != nil {
		return
	}
	p := keys.get(stream, key)
	p.dropThrough(upTo)
	if p.intent != nil && p.intent.upTo <= upTo {
		p.intent = nil
	}
}

// requeue resolves each key's unfinished flush with the sink, then puts
// the records not stored back into the buffer. It returns how many flushes
// it resolved and the bytes it requeued.
func (b *Buffer) requeue(ctx context.Context, keys pendingKeys) (resolved, bytes int, err error) {
	now := time.Now()
	for _, p := range keys {
		if in := p.intent; in != nil {
			p.dropBefore(in.first)
		}
		if in := p.intent; in != nil && len(p.records) > 0 && p.records[0].lsn <= in.upTo {
			n, err := b.landed(ctx, p, in)
			if err != nil {
				return resolved, bytes, err
			}
			p.dropBytes(in.stored+n, in.upTo)
			resolved++
		}
		for _, c := range p.records {
			if len(c.data) == 0 {
				continue
			}
			b.budget.Force(int64(len(c.data)))
			b.addToKey(p.stream, []byte(p.key), c.data, logline.Summary{}, c.lsn, c.skip, now)
			bytes += len(c.data)
		}
	}
	return resolved, bytes, nil
}

// landed asks the sink what an unfinished flush stored, retrying while
// storage is unreachable: guessing could lose or duplicate data.
func (b *Buffer) landed(ctx context.Context, p *pendingKey, in *pendingIntent) (int, error) {
	var n int
	err := b.landedRetry.Do(ctx, func(ctx context.Context) error {
		var err error
		n, err = b.streams[p.stream].Flusher.Landed(ctx, p.key, in.body)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cannot resolve the unfinished flush of %s: %w", p.key, err)
	}
	return n, nil
}
