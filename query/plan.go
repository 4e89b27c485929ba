package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
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

	hourStart   time.Time // the hour walk is in (descHour reads it)
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
		return r.walk(ctx, r.descHour)
	}
	return r.walk(ctx, r.hour)
}

// walk calls fn with the candidates of every hour of the range that has
// any, oldest hour first, or newest first with Desc (r.hourStart is then
// the hour's start). The hours of a partial day at either end are listed
// one by one; the whole days between, a day per listing, and only the days
// that may hold blobs (seek): a range over centuries without data costs a
// few dozen listings per service, not one per day or hour.
func (r *runner) walk(ctx context.Context, fn func(context.Context, []candidate) error) error {
	services, err := r.services(ctx)
	if err != nil || len(services) == 0 {
		return err
	}
	from, to := r.q.From.UTC(), r.q.To.UTC()
	r.st.Prefixes = len(services) * hoursIn(from, to)
	// [lo, hi): the whole UTC days inside the range, if any.
	lo, hi := from.Truncate(day), to.Truncate(day)
	if lo.Before(from) {
		lo = lo.Add(day)
	}
	hi = later(hi, lo)
	headEnd, tailStart := earlier(lo, to), hi
	hours := func(a, b time.Time) error { return r.walkHours(ctx, services, a, b, fn) }
	if r.q.Desc {
		if err := hours(tailStart, to); err != nil {
			return err
		}
		if err := r.walkDays(ctx, services, lo, hi, fn); err != nil {
			return err
		}
		return hours(from, headEnd)
	}
	if err := hours(from, headEnd); err != nil {
		return err
	}
	if err := r.walkDays(ctx, services, lo, hi, fn); err != nil {
		return err
	}
	return hours(tailStart, to)
}

const day = 24 * time.Hour

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// hoursIn counts the hour prefixes [from, to) touches, in seconds: the
// range may be longer than a time.Duration holds.
func hoursIn(from, to time.Time) int {
	first := from.Truncate(time.Hour)
	secs := to.Unix() - first.Unix()
	if to.Nanosecond() > 0 {
		secs++
	}
	return int(max(0, (secs+3599)/3600))
}

// walkHours lists the hours that [a, b) touches one by one, for every
// service, and calls fn with each hour's candidates: in time order, or
// newest first with Desc.
func (r *runner) walkHours(ctx context.Context, services []string, a, b time.Time, fn func(context.Context, []candidate) error) error {
	if !a.Before(b) {
		return nil
	}
	first, last := a.Truncate(time.Hour), b.Add(-1).Truncate(time.Hour)
	step, h := time.Hour, first
	if r.q.Desc {
		step, h = -time.Hour, last
	}
	for ; !h.Before(first) && !h.After(last); h = h.Add(step) {
		if err := ctx.Err(); err != nil {
			return err
		}
		cands, err := r.list(ctx, services, h, 1)
		if err != nil {
			return err
		}
		if len(cands[0]) == 0 {
			continue
		}
		r.hourStart = h
		if err := fn(ctx, cands[0]); err != nil {
			return err
		}
	}
	return nil
}

// walkDays lists the whole days [lo, hi) that may hold blobs, a day per
// listing for every service that may have blobs in it, and calls fn with
// each hour's candidates, oldest day and hour first or, with Desc, newest
// first.
func (r *runner) walkDays(ctx context.Context, services []string, lo, hi time.Time, fn func(context.Context, []candidate) error) error {
	if !lo.Before(hi) {
		return nil
	}
	start, step := lo, day
	if r.q.Desc {
		start, step = hi.Add(-day), -day
	}
	seekers := make([]seeker, len(services))
	for i := range seekers {
		seekers[i].svc = services[i]
		if err := r.seek(ctx, &seekers[i], start, lo, hi); err != nil {
			return err
		}
	}
	var active []string
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The next day any service may have blobs in.
		var d time.Time
		for i := range seekers {
			if n := seekers[i].next; !n.IsZero() && (d.IsZero() || r.q.Desc && n.After(d) || !r.q.Desc && n.Before(d)) {
				d = n
			}
		}
		if d.IsZero() {
			return nil
		}
		active = active[:0]
		for i := range seekers {
			if seekers[i].next.Equal(d) {
				active = append(active, seekers[i].svc)
			}
		}
		if err := r.walkDay(ctx, active, d, fn); err != nil {
			return err
		}
		// Only now: a query that stops in this day probes no further.
		for i := range seekers {
			if seekers[i].next.Equal(d) {
				if err := r.seek(ctx, &seekers[i], d.Add(step), lo, hi); err != nil {
					return err
				}
			}
		}
	}
}

// walkDay lists day d of services and calls fn with each hour's
// candidates, newest hour first with Desc.
func (r *runner) walkDay(ctx context.Context, services []string, d time.Time, fn func(context.Context, []candidate) error) error {
	hours, err := r.list(ctx, services, d, 24)
	if err != nil {
		return err
	}
	for k := range 24 {
		if r.q.Desc {
			k = 23 - k
		}
		if len(hours[k]) == 0 {
			continue
		}
		r.hourStart = d.Add(time.Duration(k) * time.Hour)
		if err := fn(ctx, hours[k]); err != nil {
			return err
		}
	}
	return nil
}

// Blocks are the calendar spans whose blobs share a name prefix after
// "{service}/": the leading one, two and three digits of a four-digit year
// (a millennium, a century, a decade: "2", "20", "202"), a year ("2026/")
// and a month ("2026/11/"). A probe of a block's prefix (a listing stopped
// at its first name) that finds nothing rules the whole block out.
const blockLevels = 5

// blockAt returns the level-l block (0: millennium .. 4: month) that holds
// t: its start, its end and its name prefix. ok is false for a year the
// digit blocks do not cover.
func blockAt(t time.Time, l int) (start, end time.Time, prefix string, ok bool) {
	y, m := t.Year(), t.Month()
	date := func(y int, m time.Month) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC) }
	switch l {
	case 0, 1, 2:
		size := [...]int{1000, 100, 10}[l]
		y0 := y - y%size
		if y0 < 1000 || y0+size > 10000 {
			return start, end, "", false
		}
		return date(y0, 1), date(y0+size, 1), strconv.Itoa(y0)[:l+1], true
	case 3:
		return date(y, 1), date(y+1, 1), t.Format("2006/"), true
	default:
		return date(y, m), date(y, m+1), t.Format("2006/01/"), true
	}
}

// seeker finds, for one service, the whole days of a range that may hold
// its blobs.
type seeker struct {
	svc  string
	next time.Time // the day found; zero when none is left
	// known holds, per level, the start of the last block a probe found
	// blobs in: the walk goes one way, so no block is probed twice.
	known [blockLevels]time.Time
}

// seek sets sk.next to the first day from d on (back from d with Desc)
// within [lo, hi) that no empty block rules out. Only blocks wholly inside
// [lo, hi) are probed: a short range probes nothing, and no probe is
// spent on a block mostly outside the range.
func (r *runner) seek(ctx context.Context, sk *seeker, d, lo, hi time.Time) error {
next:
	for !d.Before(lo) && d.Before(hi) {
		for l := range blockLevels {
			start, end, prefix, ok := blockAt(d, l)
			if !ok || start.Before(lo) || end.After(hi) || sk.known[l].Equal(start) {
				continue
			}
			found, err := r.probe(ctx, sk.svc+"/"+prefix)
			if err != nil {
				return err
			}
			if found {
				sk.known[l] = start
				continue
			}
			if r.q.Desc {
				d = start.Add(-day)
			} else {
				d = end
			}
			continue next
		}
		sk.next = d
		return nil
	}
	sk.next = time.Time{}
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
