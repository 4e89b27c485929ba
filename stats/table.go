package stats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"ingest/logline"
	"ingest/shard"
	"ingest/tablesink"
)

// TableName is the stats table.
const TableName = "stats"

// Store is what the stats need from a table service; tablesink's stores
// implement it.
type Store interface {
	CreateTable(ctx context.Context, name string) error
	// Batch upserts (insert or replace) as one transaction.
	Batch(ctx context.Context, table string, ents []tablesink.Entity) error
	Query(ctx context.Context, table, pk, rowFrom, rowTo string, top int) ([]tablesink.Entity, error)
}

// hourProps[h] is "Hhh" and levelProps[h][l] "Hhh_<level>" ("Hhh_none" for
// events without a level): the data series' property names.
var hourProps, levelProps = func() (h [24]string, l [24][logline.NumLevels]string) {
	for i := range 24 {
		h[i] = fmt.Sprintf("H%02d", i)
		for lv := range logline.NumLevels {
			name := logline.Level(lv).String()
			if name == "" {
				name = "none"
			}
			l[i][lv] = h[i] + "_" + name
		}
	}
	return
}()

// instanceProp names the writer of a blob's entity.
const instanceProp = "Instance"

// Table writes and reads the stats table.
type Table struct {
	store    Store
	instance string
}

// New returns the stats of store, written as cfg.Instance.
func New(store Store, cfg Config) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Table{store: store, instance: cfg.Instance}, nil
}

// Count records what blob, of the logs key "{service}/YYYY/MM/DD/hh00",
// holds: it replaces the blob's entity with held's counts (see the
// package comment). It implements blobsink.Counter.
func (t *Table) Count(ctx context.Context, key, blob string, held logline.Summary) error {
	service, hour, ok := splitLogKey(key)
	if !ok {
		return fmt.Errorf("cannot count blob %s: %q is not a logs key (service/YYYY/MM/DD/hh00)", blob, key)
	}
	h := hour.Hour()
	props := map[string]any{hourProps[h]: held.Count, instanceProp: t.instance}
	for l, n := range held.ByLevel {
		if n > 0 {
			props[levelProps[h][l]] = n
		}
	}
	e := tablesink.Entity{PartitionKey: partitionKey(service, hour), RowKey: rowKey(hour, blob), Props: props}
	err := t.store.Batch(ctx, TableName, []tablesink.Entity{e})
	if errors.Is(err, tablesink.ErrTableNotFound) {
		if err := t.store.CreateTable(ctx, TableName); err != nil {
			return fmt.Errorf("cannot create table %s: %w", TableName, err)
		}
		err = t.store.Batch(ctx, TableName, []tablesink.Entity{e})
	}
	if err != nil {
		return fmt.Errorf("cannot write the counts of blob %s: %w", blob, err)
	}
	return nil
}

// splitLogKey splits a logs key into its service and the start of its
// hour.
func splitLogKey(key string) (service string, hour time.Time, ok bool) {
	const suffix = len("/YYYY/MM/DD/hh00")
	if len(key) <= suffix || key[len(key)-suffix] != '/' || !strings.HasSuffix(key, "00") {
		return "", time.Time{}, false
	}
	hour, err := time.Parse("2006/01/02/1504", key[len(key)-suffix+1:])
	if err != nil {
		return "", time.Time{}, false
	}
	return key[:len(key)-suffix], hour, true
}

// partitionKey is "{escaped service}~{YYYYMMDD}": a service's day.
func partitionKey(service string, day time.Time) string {
	b := shard.EscapeKey(make([]byte, 0, len(service)+9), []byte(service))
	b = append(b, shard.UserSep)
	return string(day.UTC().AppendFormat(b, "20060102"))
}

// rowKey is "{hh}00~{blob file name}". An instance name, the RowKey of
// the per-instance layout, is escaped and never holds a '~'.
func rowKey(hour time.Time, blob string) string {
	return hour.Format("1504") + "~" + blob[strings.LastIndexByte(blob, '/')+1:]
}

// HourStats is one hour of a service's counts.
type HourStats struct {
	Total  int64
	Levels [logline.NumLevels]int64 // indexed by logline.Level (LevelNone: events without a level)
}

// Read sums the counts of service on the UTC day of day, hour by hour:
// one range query of the service's day partition.
func Read(ctx context.Context, store Store, service string, day time.Time) ([24]HourStats, error) {
	var out [24]HourStats
	ents, err := store.Query(ctx, TableName, partitionKey(service, day), "", "", 1<<20)
	if errors.Is(err, tablesink.ErrTableNotFound) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("cannot read the stats of %s: %w", service, err)
	}
	for _, e := range ents {
		for h := range 24 {
			out[h].Total += asInt64(e.Props[hourProps[h]])
			for lv := range logline.NumLevels {
				out[h].Levels[lv] += asInt64(e.Props[levelProps[h][lv]])
			}
		}
	}
	return out, nil
}

// ReadStats is Read on the table's store (for GET /v1/stats/{service}).
func (t *Table) ReadStats(ctx context.Context, service string, day time.Time) ([24]HourStats, error) {
	return Read(ctx, t.store, service, day)
}

func asInt64(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}
