package tablesink

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"ingest/intake/login"
	"ingest/internal/httperr"
	"ingest/shard"
)

// maxTailQueries bounds the range queries one Tail runs at once.
const maxTailQueries = 16

// Tail returns user's latest attempts, newest first, at most limit, from
// today's table back through the previous days-1 (tomorrow's too, for
// clients whose clocks run ahead), stopping as soon as limit attempts are
// found (today's is read at the same time as tomorrow's). In a day table
// it runs one range query ($top=limit, the user's RowKey range) in the
// user's unsalted partition; only if that finds the user's salted marker
// first does it query the user's salted partitions too, in parallel. Tables of the first key scheme are read with its keys.
func (s *Sink) Tail(ctx context.Context, user string, days, limit int) ([]login.Attempt, error) {
	var out []login.Attempt
	err := s.TailEach(ctx, user, days, limit, func(a *login.Attempt) error {
		out = append(out, *a)
		return nil
	})
	return out, err
}

// TailEach is Tail handing each attempt to fn as soon as its day is read,
// so an answer can be streamed; an error from fn stops it and is returned.
// A panic in its reading (its own goroutines included) is returned as a
// *httperr.Panic.
func (s *Sink) TailEach(ctx context.Context, user string, days, limit int, fn func(*login.Attempt) error) (err error) {
	defer httperr.Recover(&err)
	if limit <= 0 || user == "" {
		return nil
	}
	days = max(days, 1)
	today := dayOf(s.now().UnixNano())
	// Tomorrow's table (attempts of clients whose clocks run ahead) is
	// nearly always empty: today's is read at the same time, so that it
	// costs a lookup no round trip of its own.
	todays := make(chan dayAttempts, 1)
	go func(top int) {
		var r dayAttempts
		defer func() { todays <- r }()
		defer httperr.Recover(&r.err) // a bug one read reaches ends that read, not the process
		r.got, r.err = s.tailDay(ctx, tableName(s.prefix, today), []byte(user), top)
	}(limit)
	for day := today + 1; day > today-int64(days) && limit > 0; day-- {
		if s.expired(day) {
			break
		}
		var got []login.Attempt
		var err error
		if day == today {
			r := <-todays
			got, err = r.got[:min(len(r.got), limit)], r.err
		} else {
			got, err = s.tailDay(ctx, tableName(s.prefix, day), []byte(user), limit)
		}
		if err != nil {
			return err
		}
		for i := range got {
			if err := fn(&got[i]); err != nil {
				return err
			}
		}
		limit -= len(got)
	}
	return nil
}

type dayAttempts struct {
	got []login.Attempt
	err error
}

// tailDay returns the newest top attempts of user in one day table.
func (s *Sink) tailDay(ctx context.Context, table string, user []byte, top int) ([]login.Attempt, error) {
	sc, err := s.scheme(ctx, table)
	if err != nil || sc == schemeNoTable {
		return nil, err
	}
	from, to := shard.UserRange(user)
	home := string(s.keyer.AppendKey(nil, user, -1))
	ents, err := s.store.Query(ctx, table, home, from, to, top+1)
	if err != nil {
		return nil, fmt.Errorf("cannot read login attempts of partition %s in %s: %w", home, table, err)
	}
	var ranges []query
	if len(ents) > 0 && shard.IsSaltedMarker(ents[0].RowKey) {
		salts, _ := ents[0].Props["Salts"].(int32)
		ents = ents[1:]
		for _, pk := range s.saltedKeys(user, int(salts)) {
			if pk != home {
				ranges = append(ranges, query{pk, from, to})
			}
		}
	}
	if sc == schemeMixed {
		for _, pk := range s.keyer.LegacyReadKeys(user) {
			ranges = append(ranges, query{pk, "", ""})
		}
	}
	more, err := s.queryAll(ctx, table, ranges, top)
	if err != nil {
		return nil, err
	}
	out := make([]login.Attempt, 0, len(ents)+len(more))
	for _, set := range [][]Entity{ents, more} {
		for i := range set {
			if set[i].PartitionKey == home && shard.IsSaltedMarker(set[i].RowKey) {
				continue
			}
			out = append(out, attemptFromEntity(&set[i]))
		}
	}
	if len(ranges) > 0 {
		slices.SortFunc(out, func(a, b login.Attempt) int {
			return cmp.Or(cmp.Compare(b.Time, a.Time), bytes.Compare(a.ID, b.ID))
		})
	}
	return out[:min(top, len(out))], nil
}

// saltedKeys lists the partitions of user's salts 0..salts-1 (the count the
// marker recorded when they were written), each once.
func (s *Sink) saltedKeys(user []byte, salts int) []string {
	var keys []string
	for salt := range min(salts, 100) {
		pk := string(s.keyer.AppendKey(nil, user, salt))
		if !slices.Contains(keys, pk) {
			keys = append(keys, pk)
		}
	}
	return keys
}

type query struct{ pk, from, to string }

// queryAll runs range queries in parallel, at most maxTailQueries at once.
func (s *Sink) queryAll(ctx context.Context, table string, qs []query, top int) ([]Entity, error) {
	if len(qs) == 0 {
		return nil, nil
	}
	results := make([][]Entity, len(qs))
	errs := make([]error, len(qs))
	sem := make(chan struct{}, maxTailQueries)
	var wg sync.WaitGroup
	for i, q := range qs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			defer httperr.Recover(&errs[i])
			results[i], errs[i] = s.store.Query(ctx, table, q.pk, q.from, q.to, top)
		})
	}
	wg.Wait()
	var all []Entity
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("cannot read login attempts of partition %s in %s: %w", qs[i].pk, table, err)
		}
		all = append(all, results[i]...)
	}
	return all, nil
}
