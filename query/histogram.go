package query

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"ingest/internal/httperr"
	"ingest/logline"
)

// Histogram bounds, checked before any arithmetic on the range: a
// histogram has at most MaxBuckets buckets of MinInterval to MaxInterval,
// a whole number of seconds each.
const (
	MaxBuckets  = 100000
	MinInterval = time.Second
	// MaxInterval keeps the first bucket's start, the range's start rounded
	// down to the interval, inside what Unix nanoseconds hold (from 1677-09-21)
	// for a range that starts at the earliest stored time, 1678-01-01.
	MaxInterval = 31 * 24 * time.Hour
)

// Histogram counts matching events per interval and level.
type Histogram struct {
	From     time.Time // start of the first bucket: q.From rounded down to Interval (UTC)
	To       time.Time // q.To: the last bucket ends at or after it
	Interval time.Duration
	Counts   [][7]int64 // per bucket, indexed by logline.Level
}

// Bucket returns the start time of bucket i. It counts in seconds: i
// intervals may be more than a time.Duration holds.
func (h *Histogram) Bucket(i int) time.Time {
	return time.Unix(h.From.Unix()+int64(i)*int64(h.Interval/time.Second), 0).UTC()
}

// refused marks err as the client's to fix (an HTTP 400): the query was
// refused before anything was read.
func refused(err error) error {
	return &httperr.Error{Status: http.StatusBadRequest, Msg: err.Error(), Err: err}
}

// CheckInterval reports what is wrong with a histogram interval, naming
// the bounds.
func CheckInterval(interval time.Duration) error {
	switch {
	case interval < MinInterval || interval > MaxInterval:
		return fmt.Errorf("cannot make a histogram of interval %s: use an interval from %s to %s (31 days)", interval, MinInterval, MaxInterval)
	case interval%time.Second != 0:
		return fmt.Errorf("cannot make a histogram of interval %s: use a whole number of seconds", interval)
	}
	return nil
}

// RunHistogram counts the events q selects (q.Limit and q.Desc are ignored)
// per interval and level, without handing out lines. Blobs are pruned by
// their metadata like a query's (time range, and LogType with a level); a
// read blob costs a scan of its lines' time and level fields only, and no
// sorting. A range of more than MaxBuckets intervals is refused before
// anything is read.
func RunHistogram(ctx context.Context, store Store, q Query, interval time.Duration) (_ Histogram, st Stats, err error) {
	defer httperr.Recover(&err)
	q.Limit, q.Desc = 0, false
	if err := q.Validate(); err != nil {
		return Histogram{}, st, refused(err)
	}
	if err := CheckInterval(interval); err != nil {
		return Histogram{}, st, refused(err)
	}
	clampRange(&q)
	h := Histogram{From: q.From.UTC().Truncate(interval), To: q.To.UTC(), Interval: interval}
	// In seconds, which hold any stored range: nanoseconds do not hold
	// 1678..2261 as one time.Duration.
	span := h.To.Unix() - h.From.Unix()
	if h.To.Nanosecond() > 0 {
		span++
	}
	ivs := int64(interval / time.Second)
	n := (span + ivs - 1) / ivs
	if n > MaxBuckets {
		return Histogram{}, st, refused(fmt.Errorf("cannot make a histogram of %d buckets (at most %d): use a larger interval or a shorter range", n, MaxBuckets))
	}
	h.Counts = make([][7]int64, max(n, 0))
	if !q.From.Before(q.To) {
		return h, st, nil // nothing can be stored in the range
	}
	r := newRunner(store, &q, nil, &st)
	r.f.countOnly = true
	defer r.decoders.close()
	from, iv := h.From.UnixNano(), uint64(interval)
	err = r.walk(ctx, func(ctx context.Context, cands []candidate) error {
		for i, c := range cands {
			s, err := r.open(ctx, c, i)
			if err != nil {
				return err
			}
			if s == nil {
				continue
			}
			for lines := 0; ; lines++ {
				if lines&4095 == 0 {
					if err := ctx.Err(); err != nil {
						r.close(s)
						return err
					}
				}
				ok, err := r.advance(s)
				if err != nil || !ok {
					r.close(s)
					if err != nil {
						return err
					}
					break
				}
				// Unsigned: the filter keeps s.t in [q.From, q.To), at or
				// after from, and the difference of two times of
				// 1677..2262 fits 64 bits unsigned, not signed.
				if b := uint64(s.t-from) / iv; b < uint64(len(h.Counts)) {
					h.Counts[b][s.info.level]++
				}
			}
		}
		return nil
	})
	return h, st, err
}

// Level names as the histogram shows them ("none" for no level).
func levelName(l logline.Level) string {
	if l == logline.LevelNone {
		return "none"
	}
	return l.String()
}

// AppendJSON appends the histogram as one JSON object: the range, the
// interval in seconds and the non-empty buckets, each with its start, total and
// per-level counts:
//
//	{"from":"...","to":"...","interval_seconds":60,"buckets":[{"ts":"2026-11-21T16:04:00.0000000Z","total":3,"info":2,"error":1}]}
func (h *Histogram) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"from":"`...)
	dst = logline.AppendTime(dst, h.From.UnixNano())
	dst = append(dst, `","to":"`...)
	dst = logline.AppendTime(dst, h.To.UnixNano())
	dst = fmt.Appendf(dst, `","interval_seconds":%d,"buckets":[`, int64(h.Interval/time.Second))
	first := true
	for i, c := range h.Counts {
		var total int64
		for _, n := range c {
			total += n
		}
		if total == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, `{"ts":"`...)
		dst = logline.AppendTime(dst, h.Bucket(i).UnixNano())
		dst = fmt.Appendf(dst, `","total":%d`, total)
		for l, n := range c {
			if n > 0 {
				dst = fmt.Appendf(dst, `,"%s":%d`, levelName(logline.Level(l)), n)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}
