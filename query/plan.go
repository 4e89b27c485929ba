package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"ingest/blobsink"
	"ingest/logline"
)

// TopLister is an optional Store extension: the distinct first path segments
// of the container's blob names (FileStore reads one directory; AzureStore
// does one hierarchical listing with delimiter "/"). With it, Services "*"
// costs one cheap listing; without it "*" lists every blob once.
type TopLister interface {
	ListTop(ctx context.Context) ([]string, error)
}

// candidate is a blob of one hour that may hold matching events.
type candidate struct {
	name  string
	start int64 // StartTime metadata; math.MinInt64 when unknown
	end   int64 // EndTime metadata; math.MaxInt64 when unknown
	size  int64 // stored bytes when listed
	late  int64 // Lateness metadata (blobsink.Meta.Late); -1 when unknown
	count int64 // EventCount metadata; 0 when unknown
}

// runner holds one query's state.
type runner struct {
	store Store
	q     *Query
	cfg   Config
	fn    func([]byte, *logline.Event) error
	st    *Stats
	f     filter
	sort  sorter
	ev    logline.Event // handed to fn
	msg   []byte        // ev's unescaped message, when it has escapes

	budget chan struct{} // read-ahead batches beyond one per open blob (see stream)

	hourStart   time.Time // the hour walkDesc is in
	nextRelease int       // buffered lines at which hour next tries to release some
	lastT       int64     // the last time handed out

	decoders decoders
}

func newRunner(store Store, q *Query, fn func([]byte, *logline.Event) error, st *Stats) *runner {
	cfg := q.Config.withDefaults()
	r := &runner{store: store, q: q, cfg: cfg, fn: fn, st: st, f: newFilter(q), sort: newSorter(cfg.SortBytes), lastT: math.MinInt64}
	if q.Desc {
		r.lastT = math.MaxInt64
	}
	r.budget = make(chan struct{}, cfg.ReadAheadBytes/batchBytes)
	for range cap(r.budget) {
		r.budget <- struct{}{}
	}
	return r
}

func (r *runner) run(ctx context.Context) error {
	if r.q.Desc {
		return r.walkDesc(ctx, r.descHour)
	}
	return r.walk(ctx, r.hour)
}

// walk calls fn with the candidates of every hour of the range that has
// any, oldest hour first.
func (r *runner) walk(ctx context.Context, fn func(context.Context, []candidate) error) error {
	services, err := r.services(ctx)
	if err != nil {
		return err
	}
	if len(services) == 0 {
		return nil
	}
	from, to := r.q.From.UTC(), r.q.To.UTC()
	start := from.Truncate(time.Hour)
	r.st.Prefixes = len(services) * int((to.Sub(start)+time.Hour-1)/time.Hour)
	// emptyUntil[i]: service i has no blob before this time (a probe of a
	// whole year or month found none), so a long range over years without
	// data costs one listing per year, not one per day.
	emptyUntil := make([]time.Time, len(services))
	active := make([]string, 0, len(services))
	for h := start; h.Before(to); {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, p := range []struct {
			at     bool
			end    time.Time
			layout string
		}{
			{h.YearDay() == 1 && h.Hour() == 0, h.AddDate(1, 0, 0), "2006/"},
			{h.Day() == 1 && h.Hour() == 0, h.AddDate(0, 1, 0), "2006/01/"},
		} {
			if !p.at || !p.end.Add(-time.Hour).Before(to) {
				continue
			}
			for i, svc := range services {
				if emptyUntil[i].After(h) {
					continue
				}
				found, err := r.probe(ctx, svc+"/"+h.Format(p.layout))
				if err != nil {
					return err
				}
				if !found {
					emptyUntil[i] = p.end
				}
			}
		}
		active = active[:0]
		next := time.Time{}
		for i, svc := range services {
			if !emptyUntil[i].After(h) {
				active = append(active, svc)
			} else if next.IsZero() || emptyUntil[i].Before(next) {
				next = emptyUntil[i]
			}
		}
		if len(active) == 0 {
			h = next
			continue
		}
		// A whole UTC day inside the range is listed with one prefix per
		// service instead of 24.
		n := 1
		if h.Hour() == 0 && h.Add(23*time.Hour).Before(to) {
			n = 24
		}
		hours, err := r.list(ctx, active, h, n)
		if err != nil {
			return err
		}
		for _, cands := range hours {
			if len(cands) == 0 {
				continue
			}
			if err := fn(ctx, cands); err != nil {
				return err
			}
		}
		h = h.Add(time.Duration(n) * time.Hour)
	}
	return nil
}

// errFound stops a probe's listing at the first blob.
var errFound = errors.New("found a blob")

// probe reports whether any blob name starts with prefix.
func (r *runner) probe(ctx context.Context, prefix string) (bool, error) {
	r.st.Listings++
	err := r.store.List(ctx, prefix, func(blobsink.BlobInfo) error { return errFound })
	if errors.Is(err, errFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot list blobs under %s: %w", prefix, err)
	}
	return false, nil
}

// services resolves "*" and normalises names as the writer does.
func (r *runner) services(ctx context.Context) ([]string, error) {
	var names []string
	for _, s := range r.q.Services {
		if s == "*" {
			all, err := discover(ctx, r.store)
			if err != nil {
				return nil, fmt.Errorf("cannot list the services in the container: %w", err)
			}
			names = append(names, all...)
			continue
		}
		names = append(names, string(logline.AppendService(nil, []byte(s))))
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Services lists the services that have blobs in the store, sorted: the
// container's top-level names a writer could have produced.
func Services(ctx context.Context, store Store) ([]string, error) {
	names, err := discover(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("cannot list the services in the container: %w", err)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// discover lists the top-level names of the container.
func discover(ctx context.Context, store Store) ([]string, error) {
	var names []string
	switch s := store.(type) {
	case TopLister:
		top, err := s.ListTop(ctx)
		if err != nil {
			return nil, err
		}
		names = top
	default:
		seen := map[string]bool{}
		err := store.List(ctx, "", func(b blobsink.BlobInfo) error {
			if top, _, ok := strings.Cut(b.Name, "/"); ok && !seen[top] {
				seen[top] = true
				names = append(names, top)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Only names the writer could have produced: this also keeps a stray
	// top-level file or folder from turning into an odd prefix.
	return slices.DeleteFunc(names, func(n string) bool { return !logline.IsToken([]byte(n)) }), nil
}

// list lists n consecutive hours starting at h (n is 1, or 24 for a whole
// day) for every service, and returns each hour's candidates.
func (r *runner) list(ctx context.Context, services []string, h time.Time, n int) ([][]candidate, error) {
	hours := make([][]candidate, n)
	var pfx []byte
	for _, svc := range services {
		pfx = append(pfx[:0], svc...)
		pfx = append(pfx, '/')
		pfx = h.AppendFormat(pfx, blobsink.HourLayout)
		if n == 24 {
			pfx = pfx[:len(pfx)-len("hh00")] // {svc}/YYYY/MM/DD/
		} else {
			pfx = append(pfx, '/')
		}
		prefix := string(pfx)
		r.st.Listings++
		err := r.store.List(ctx, prefix, func(b blobsink.BlobInfo) error {
			r.st.BlobsListed++
			i, ok := hourIndex(b.Name, prefix, n)
			if !ok {
				r.st.BlobsSkipped++
				return nil
			}
			c := candidate{name: b.Name, start: math.MinInt64, end: math.MaxInt64, size: b.Size, late: -1}
			if m, ok := blobsink.ParseMeta(b.Metadata); ok {
				if !r.mayMatch(m, b.Metadata) {
					r.st.BlobsSkipped++
					return nil
				}
				c.start, c.end, c.count = m.Start, m.End, m.Count
				if m.LateKnown {
					c.late = m.Late
				}
			}
			hours[i] = append(hours[i], c)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cannot list blobs under %s: %w", prefix, err)
		}
	}
	return hours, nil
}

// hourIndex checks that name is a log blob directly under one hour of the
// listed prefix and returns that hour's index (0 for an hour listing, the
// hour of day for a day listing).
func hourIndex(name, prefix string, n int) (int, bool) {
	p, _, ok := blobsink.ParseBlobName(name)
	if !ok || !strings.HasPrefix(p+"/", prefix) {
		return 0, false
	}
	if n == 1 {
		return 0, len(p)+1 == len(prefix)
	}
	hh := p[len(prefix):]
	if len(hh) != 4 || hh[2:] != "00" || hh[0] < '0' || hh[0] > '2' || hh[1] < '0' || hh[1] > '9' {
		return 0, false
	}
	i := int(hh[0]-'0')*10 + int(hh[1]-'0')
	if i >= 24 {
		return 0, false
	}
	return i, true
}

// mayMatch reports whether a blob with valid metadata can hold a match.
func (r *runner) mayMatch(m blobsink.Meta, md map[string]string) bool {
	if !m.Overlaps(r.q.From, r.q.To) {
		return false
	}
	if r.q.Level == logline.LevelNone && (r.q.Levels == 0 || r.q.Levels.Has(logline.LevelNone)) {
		return true
	}
	if _, ok := blobsink.MetaValue(md, blobsink.MetaLogType); !ok {
		return true
	}
	// LogType lists the levels present; events without a level never match
	// a minimum level or a set without LevelNone, so an empty set rules the
	// blob out too.
	for l := max(r.q.Level, logline.LevelTrace); l <= logline.LevelFatal; l++ {
		if m.Levels.Has(l) && (r.q.Levels == 0 || r.q.Levels.Has(l)) {
			return true
		}
	}
	return false
}
