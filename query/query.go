package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
	"ingest/internal/httperr"
	"ingest/logline"
)

// Query selects events. The zero Config means the defaults.
type Query struct {
	// Services to read; "*" means every service in the container (found by
	// listing its top-level names). Names are normalised the way the writer
	// normalises them (bytes outside [A-Za-z0-9._:@-] become '_').
	Services []string
	// From (inclusive) and To (exclusive) bound the event time.
	From, To time.Time
	// Level is the minimum severity: LevelWarn selects warn, error and
	// fatal. LevelNone selects every event, including those without a level.
	Level logline.Level
	// Levels, when not empty, are the levels an event must have exactly
	// (LevelNone: no level), besides Level.
	Levels logline.LevelSet
	// Host, when set, must accept the event's host (as stored, empty when
	// none). It is called from several goroutines at once.
	Host func(host []byte) bool
	// Text must occur in the message (case-sensitive, after JSON unescaping).
	Text string
	// Keep, when set, must accept the message (after JSON unescaping), as
	// Text does. It is called from several goroutines at once.
	Keep func(msg []byte) bool
	// Grep must match the stored line (without its '\n'), as written in the
	// blob: the message is JSON-quoted there.
	Grep *regexp.Regexp
	// Limit stops the query after that many events (the earliest ones, or
	// the latest with Desc); 0 means no limit.
	Limit int
	// Desc hands out the newest events first: hours newest first, and
	// within an hour the latest events first. With a Limit, an hour's blobs
	// are read backwards from their ends, newest (by EndTime) first, and
	// reading stops once none can hold an event newer than those already
	// found (desc.go, backward.go).
	Desc bool
	// Config bounds the memory a query uses; zero fields take the defaults.
	Config Config
}

// Defaults for Config.
const (
	DefaultSortBytes    = 16 << 20
	DefaultMaxLineBytes = 4 << 20
	DefaultMaxOpenBlobs = 64
	DefaultReadAhead    = 8 << 20
	DefaultReorderBytes = 16 << 20
)

// Config bounds the memory of one query (see the package comment).
type Config struct {
	SortBytes    int // sort buffer for one hour's matching lines
	MaxLineBytes int // longer lines are skipped and counted
	MaxOpenBlobs int // blobs open at once within an hour
	// ReadAheadBytes is read ahead, decoded and filtered, shared by the
	// open blobs beyond one batch (128 KiB) each.
	ReadAheadBytes int
	// ReorderBytes is how far, in bytes of its blob's lines, an event may
	// be stored from its place in time order (a blob holds lines in the
	// order they arrived) with newest-first reading still exact: a blob
	// read backwards is known to hold nothing newer than the oldest line
	// read ReorderBytes ago (backward.go).
	ReorderBytes int
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{SortBytes: DefaultSortBytes, MaxLineBytes: DefaultMaxLineBytes, MaxOpenBlobs: DefaultMaxOpenBlobs,
		ReadAheadBytes: DefaultReadAhead, ReorderBytes: DefaultReorderBytes}
}

// RegisterFlags adds the query memory flags to fs, with c's values as
// their defaults (start from DefaultConfig). The sizes take a unit
// (16MiB) or a bare number of bytes.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	flagutil.IntBytesVar(fs, &c.SortBytes, "query-sort-bytes", c.SortBytes, "memory per query for sorting an hour's matching lines; output is exactly time-ordered when they fit")
	flagutil.IntBytesVar(fs, &c.MaxLineBytes, "query-max-line-bytes", c.MaxLineBytes, "longest stored line a query reads; longer lines are skipped and counted")
	fs.IntVar(&c.MaxOpenBlobs, "query-max-open-blobs", c.MaxOpenBlobs, "blobs a query keeps open at once while merging an hour")
	flagutil.IntBytesVar(fs, &c.ReadAheadBytes, "query-read-ahead-bytes", c.ReadAheadBytes, "matching lines a query reads ahead, shared by its open blobs beyond 128 KiB each")
	flagutil.IntBytesVar(fs, &c.ReorderBytes, "query-reorder-bytes", c.ReorderBytes, "how far (bytes of its blob) an event may be stored from its place in time order for output to stay exact; a blob is read this far past an event before it goes out, or this deep from its end newest first, unless its Lateness metadata allows less")
}

// Validate checks the settings; zero values stand for the defaults. It
// changes nothing.
func (c *Config) Validate() error {
	switch {
	case c.SortBytes < 0:
		return errors.New("cannot use a negative --query-sort-bytes")
	case c.SortBytes > 0 && c.SortBytes < 1<<20:
		return fmt.Errorf("cannot use --query-sort-bytes %d: use at least 1 MiB", c.SortBytes)
	case c.MaxLineBytes < 0:
		return errors.New("cannot use a negative --query-max-line-bytes")
	case c.MaxOpenBlobs < 0:
		return errors.New("cannot use a negative --query-max-open-blobs")
	case c.ReadAheadBytes < 0:
		return errors.New("cannot use a negative --query-read-ahead-bytes")
	case c.ReorderBytes < 0:
		return errors.New("cannot use a negative --query-reorder-bytes")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.SortBytes == 0 {
		c.SortBytes = DefaultSortBytes
	}
	if c.MaxLineBytes == 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.MaxOpenBlobs == 0 {
		c.MaxOpenBlobs = DefaultMaxOpenBlobs
	}
	if c.ReadAheadBytes == 0 {
		c.ReadAheadBytes = DefaultReadAhead
	}
	if c.ReorderBytes == 0 {
		c.ReorderBytes = DefaultReorderBytes
	}
	return c
}

// Validate reports what is wrong with q, in terms a user can act on.
func (q *Query) Validate() error {
	if len(q.Services) == 0 {
		return errors.New("cannot query: no service given; name one or more (comma separated), or * for all")
	}
	if len(q.Services) > MaxServices {
		return fmt.Errorf("cannot query %d services at once: name at most %d, or * for all", len(q.Services), MaxServices)
	}
	for _, s := range q.Services {
		if s == "" {
			return errors.New("cannot query: empty service name")
		}
	}
	if q.From.IsZero() || q.To.IsZero() {
		return errors.New("cannot query: both from and to are required (RFC 3339, now, or relative like -15m)")
	}
	if !q.From.Before(q.To) {
		return fmt.Errorf("cannot query: from %s is not before to %s", q.From.UTC().Format(time.RFC3339Nano), q.To.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit < 0 {
		return fmt.Errorf("cannot query: negative limit %d", q.Limit)
	}
	return q.Config.Validate()
}

// MaxServices bounds the services a query names (a comma list): each costs
// its own listings over the whole range. "*" reads every service there is.
const MaxServices = 100

// ParseServices splits a comma-separated service list ("api, web,api" ->
// [api web]), dropping blanks and duplicates. "*" anywhere means all.
func ParseServices(s string) []string {
	var out []string
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" || seen[part] {
			continue
		}
		if part == "*" {
			return []string{"*"}
		}
		seen[part] = true
		out = append(out, part)
	}
	return out
}

// Stats describes the work a query did.
type Stats struct {
	Prefixes     int // hour prefixes (service x hour) the range covers
	Listings     int // List calls (one per service and hour, or per whole day)
	BlobsListed  int
	BlobsSkipped int // not opened: metadata rules them out (time range or levels), not a log blob name, or gone before opening
	BlobsRead    int
	BlobsDamaged int // stopped early on a decoding error (e.g. a torn compressed frame); lines before it were used

	BytesRead     int64 // as stored (compressed when the blob is)
	BytesDecoded  int64 // line bytes after decompression
	LinesScanned  int64
	LinesTooLong  int64 // over Config.MaxLineBytes, skipped
	LinesBad      int64 // not a valid line (e.g. a torn tail), skipped
	LinesMatched  int64 // passed every filter
	LinesReturned int64 // handed to fn (fewer than matched when Limit stops the query)
	// LinesOutOfOrder were handed out after a line they precede in time:
	// stored further from their place in time order than
	// Config.ReorderBytes, or than one sort buffer holds.
	LinesOutOfOrder int64
}

// The times a blob can hold: stored times are Unix nanoseconds, which
// hold 1677-09-21..2262-04-11, and the writer takes years 1678..2261.
var (
	minStored = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	maxStored = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// clampRange narrows q's range to the times a blob can hold, so that every
// time of it has Unix nanoseconds (a parsed time may be in year 1 or
// 9999). A range wholly outside becomes empty (From == To).
func clampRange(q *Query) {
	clamp := func(t time.Time) time.Time {
		switch {
		case t.Before(minStored):
			return minStored
		case t.After(maxStored):
			return maxStored
		}
		return t.UTC()
	}
	q.From, q.To = clamp(q.From), clamp(q.To)
}

// errStop ends a query early without an error (Limit reached).
var errStop = errors.New("query limit reached")

// Run streams the events that match q, in time order (see the package
// comment), to fn. line is the stored line with its '\n'; line and e are only
// valid during the call. Run stops at q.Limit events, when ctx is cancelled
// (returning ctx.Err()) or when fn returns an error (returned as is).
// Blobs are streamed, never read whole: memory is bounded by q.Config.
func Run(ctx context.Context, store Store, q Query, fn func(line []byte, e *logline.Event) error) (Stats, error) {
	return run(ctx, store, q, fn, false)
}

// RunNDJSON is Run writing each matching event to w as AppendNDJSON encodes
// it, in the same order. The read-ahead encodes the events, on every core,
// and w receives them many at a time, always whole, from the calling
// goroutine. A write error stops the query and is returned as is. The sort
// buffer (Config.SortBytes) then holds encoded events.
func RunNDJSON(ctx context.Context, store Store, q Query, w io.Writer) (Stats, error) {
	return run(ctx, store, q, func(events []byte, _ *logline.Event) error {
		_, err := w.Write(events)
		return err
	}, true)
}

// run is Run; with ndjson, fn receives runs of encoded events and no event.
// A panic is returned as a *httperr.Panic: a bug one query reaches ends that
// query only.
func run(ctx context.Context, store Store, q Query, fn func(line []byte, e *logline.Event) error, ndjson bool) (st Stats, err error) {
	defer httperr.Recover(&err)
	if err := q.Validate(); err != nil {
		return st, err
	}
	if clampRange(&q); !q.From.Before(q.To) {
		return st, nil
	}
	r := newRunner(store, &q, fn, &st)
	r.f.ndjson = ndjson
	err = r.run(ctx)
	r.decoders.close()
	if errors.Is(err, errStop) {
		err = nil
	}
	return st, err
}
