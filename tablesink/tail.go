package tablesink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// maxTailQueries bounds the range queries one Tail runs at once.
const maxTailQueries = 16

// Tail returns user's latest attempts, newest first, at most limit, from
// today's table back through the previous days-1 (tomorrow's too, for
// clients whose clocks run ahead). In each table it runs one range query per
// partition the user's attempts can be under (shard's ReadKeys: the
// unsalted key and each salt), $top=limit, in parallel, merges them by
// RowKey (inverted ticks: ascending is newest first) and stops as soon as
// limit attempts are found.
func (s *Sink) Tail(ctx context.Context, user string, days, limit int) ([]Attempt, error) {
	if limit <= 0 || user == "" {
		return nil, nil
	}
	days = max(days, 1)
	keys := s.keyer.ReadKeys([]byte(user))
	today := dayOf(s.now().UnixNano())
	var out []Attempt
	for day := today + 1; day > today-int64(days) && len(out) < limit; day-- {
		if s.expired(day) {
			break
		}
		ents, err := s.queryDay(ctx, tableName(s.prefix, day), keys, limit-len(out))
		if err != nil {
			return out, err
		}
		for i := range ents {
			out = append(out, attemptFromEntity(&ents[i]))
		}
	}
	return out, nil
}

// queryDay runs the partition queries of one table and returns the newest
// top entities among them. A missing table has no attempts.
func (s *Sink) queryDay(ctx context.Context, table string, keys []string, top int) ([]Entity, error) {
	results := make([][]Entity, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, maxTailQueries)
	var wg sync.WaitGroup
	for i, pk := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = s.store.Query(ctx, table, pk, "", top)
		})
	}
	wg.Wait()
	var all []Entity
	for i, err := range errs {
		if errors.Is(err, ErrTableNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read login attempts of partition %s in %s: %w", keys[i], table, err)
		}
		all = append(all, results[i]...)
	}
	slices.SortFunc(all, func(a, b Entity) int { return strings.Compare(a.RowKey, b.RowKey) })
	return all[:min(top, len(all))], nil
}
