package tablesink

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Key schemes of a day table. A table created by this version holds a
// marker entity (schemePK, schemeRK) saying it holds schemeBucketed keys
// only. A table without it was created by the first version (per-user
// partitions, shard's Legacy* keys) and, if it was still being written at an
// upgrade, may hold both: reads query it under both schemes until it ages
// out.
const (
	schemePK = "scheme" // never 4 hex digits nor bucket "_" user: no login partition
	schemeRK = "v2"
)

type tableScheme uint8

const (
	schemeNoTable  tableScheme = iota // the table does not exist
	schemeBucketed                    // version 2 keys only
	schemeMixed                       // version 1 keys, maybe version 2 as well
)

// schemeCache remembers each day table's scheme: it never changes once the
// table exists.
type schemeCache struct {
	mu sync.Mutex
	m  map[string]tableScheme
}

// scheme reads (once per table) which keys a day table holds.
func (s *Sink) scheme(ctx context.Context, table string) (tableScheme, error) {
	s.schemes.mu.Lock()
	sc, ok := s.schemes.m[table]
	s.schemes.mu.Unlock()
	if ok {
		return sc, nil
	}
	_, err := s.store.Get(ctx, table, schemePK, schemeRK)
	switch {
	case err == nil:
		sc = schemeBucketed
	case errors.Is(err, ErrTableNotFound):
		return schemeNoTable, nil // not cached: it may be created any time
	case errors.Is(err, errNotFound):
		sc = schemeMixed
	default:
		return 0, fmt.Errorf("cannot read the key scheme of table %s: %w", table, err)
	}
	s.schemes.mu.Lock()
	if s.schemes.m == nil {
		s.schemes.m = map[string]tableScheme{}
	}
	s.schemes.m[table] = sc
	s.schemes.mu.Unlock()
	return sc, nil
}

// ensureDayTable creates a day table that does not exist yet and marks it
// as holding version 2 keys. An existing table is left as it is: one
// without the marker was created by the first version and may already hold
// its keys. If the process dies between the create and the marker, the
// table reads as mixed: slower (two key schemes queried), never wrong.
func (s *Sink) ensureDayTable(ctx context.Context, table string) error {
	_, err := s.store.Get(ctx, table, schemePK, schemeRK)
	if err == nil || errors.Is(err, errNotFound) {
		return nil
	}
	if !errors.Is(err, ErrTableNotFound) {
		return fmt.Errorf("cannot read the key scheme of table %s: %w", table, err)
	}
	if err := s.store.CreateTable(ctx, table); err != nil {
		return fmt.Errorf("cannot create table %s: %w", table, err)
	}
	marker := Entity{PartitionKey: schemePK, RowKey: schemeRK, Props: map[string]any{"Scheme": int32(2)}}
	if _, err := s.store.Insert(ctx, table, marker); err != nil && !errors.Is(err, errExists) {
		return fmt.Errorf("cannot mark table %s with its key scheme: %w", table, err)
	}
	s.m.created.Inc()
	return nil
}
