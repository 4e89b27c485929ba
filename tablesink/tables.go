package tablesink

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Maintain makes sure today's and tomorrow's day tables exist (tomorrow's is created ahead of midnight, because Azure throttles a
// brand-new table while it learns its load), then deletes every day table
// older than --login-retention-days, each with one DeleteTable: never entity
// by entity. It returns the deleted tables. With dryRun it only lists them.
func (s *Sink) Maintain(ctx context.Context, dryRun bool) (deleted []string, err error) {
	var errs []error
	if !dryRun {
		today := dayOf(s.now().UnixNano())
		for _, t := range []string{tableName(s.prefix, today), tableName(s.prefix, today+1)} {
			if err := s.ensureDayTable(ctx, t); err != nil {
				errs = append(errs, err)
			}
		}
	}
	old, err := s.ExpiredTables(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range old {
		if dryRun {
			deleted = append(deleted, t)
			continue
		}
		if err := s.store.DeleteTable(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("cannot delete table %s: %w", t, err))
			continue
		}
		s.m.deleted.Inc()
		s.log.Info("deleted login table past the retention", "table", t, "retention_days", s.cfg.RetentionDays)
		deleted = append(deleted, t)
	}
	return deleted, errors.Join(errs...)
}

// ExpiredTables lists the day tables past the retention, oldest first.
func (s *Sink) ExpiredTables(ctx context.Context) ([]string, error) {
	names, err := s.store.ListTables(ctx, s.prefix)
	if err != nil {
		return nil, fmt.Errorf("cannot list login tables: %w", err)
	}
	var old []string
	for _, n := range names {
		if day, ok := parseTableName(s.prefix, n); ok && s.expired(day) {
			old = append(old, n)
		}
	}
	return old, nil
}

// Run calls Maintain at once and then every interval (an hour in the
// server) until ctx ends, logging failures: a failed run is simply
// repeated at the next tick.
func (s *Sink) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Maintain(ctx, false); err != nil && ctx.Err() == nil {
			s.log.Error("login table maintenance failed; retrying at the next run", "err", err, "next", interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RetentionDays is how many days of login tables Maintain keeps.
func (s *Sink) RetentionDays() int { return s.cfg.RetentionDays }
