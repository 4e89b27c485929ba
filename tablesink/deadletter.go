package tablesink

import (
	"context"
	"fmt"

	"ingest/deadletter"
	"ingest/logline"
)

// deadLetterPrefix starts the names of the dead-letter blobs:
// _deadletter/logins/YYYY/MM/DD/hh00/NNNNNN.log, by the hour they were
// written.
const deadLetterPrefix = "_deadletter/logins"

// deadLetter is one record the table cannot take.
type deadLetter struct {
	reason string // metric label: rejected or bad_record
	err    error
	record []byte // the entity as JSON, or the record line that could not be parsed
}

// SetDeadLetters makes the sink write what the table service refuses (and
// records that cannot be made into entities) to dead-letter blobs in store,
// one line each: {"ts", "table", "reason", "error", "record"}, a blob per
// flush (package deadletter). Without it such records are logged, counted
// as dropped and skipped. blobsink.Store implements deadletter.Store.
func (s *Sink) SetDeadLetters(store deadletter.Store) {
	p := s.writeRetry
	p.Op = "write_login_dead_letter"
	s.dead = deadletter.New(store, deadLetterPrefix, p)
}

// deadLetter writes dls to a new dead-letter blob. An error leaves the
// flush failed, to be retried: a dead letter is written at least once.
func (s *Sink) deadLetter(ctx context.Context, table string, dls []deadLetter) error {
	if len(dls) == 0 {
		return nil
	}
	if s.dead == nil {
		for _, d := range dls {
			s.m.dropped.WithLabelValues(d.reason).Inc()
		}
		s.log.Error("dropping login records the table cannot take (no dead-letter store)", "table", table, "records", len(dls), "err", dls[0].err)
		return nil
	}
	now := s.now()
	var block []byte
	for _, d := range dls {
		block = append(block, `{"ts":"`...)
		block = logline.AppendTime(block, now.UnixNano())
		block = append(block, `","table":`...)
		block = logline.AppendQuoted(block, []byte(table))
		block = append(block, `,"reason":`...)
		block = logline.AppendQuoted(block, []byte(d.reason))
		block = append(block, `,"error":`...)
		block = logline.AppendQuoted(block, []byte(d.err.Error()))
		block = append(block, `,"record":`...)
		block = logline.AppendQuoted(block, d.record)
		block = append(block, "}\n"...)
	}
	name, err := s.dead.Write(ctx, now, block)
	if err != nil {
		return fmt.Errorf("cannot write %d login records to the dead-letter blobs: %w", len(dls), err)
	}
	for _, d := range dls {
		s.m.deadLetters.WithLabelValues(d.reason).Inc()
	}
	s.log.Warn("login records written to a dead-letter blob", "table", table, "blob", name, "records", len(dls))
	return nil
}
