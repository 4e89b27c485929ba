package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ingest/logline"
)

// MaxBuckets bounds a histogram: a range over interval must not need more.
const MaxBuckets = 100000

// Histogram counts matching events per interval and level.
type Histogram struct {
	From     time.Time // start of the first bucket: q.From rounded down to Interval (UTC)
	To       time.Time // q.To: the last bucket ends at or after it
	Interval time.Duration
	Counts   [][7]int64 // per bucket, indexed by logline.Level
}

// Bucket returns the start time of bucket i.
func (h *Histogram) Bucket(i int) time.Time { return h.From.Add(time.Duration(i) * h.Interval) }

// RunHistogram counts the events q selects (q.Limit and q.Desc are ignored)
// per interval and level, without handing out lines. Blobs are pruned by
// their metadata like a query's (time range, and LogType with a level); a
// read blob costs a scan of its lines' time and level fields only, and no
// sorting.
func RunHistogram(ctx context.Context, store Store, q Query, interval time.Duration) (Histogram, Stats, error) {
	var st Stats
	q.Limit, q.Desc = 0, false
	if err := q.Validate(); err != nil {
		return Histogram{}, st, err
	}
	if interval < time.Second {
		return Histogram{}, st, errors.New("cannot make a histogram: the interval must be at least 1s")
	}
	h := Histogram{From: q.From.UTC().Truncate(interval), To: q.To.UTC(), Interval: interval}
	n := (q.To.Sub(h.From) + interval - 1) / interval
	if n > MaxBuckets {
		return Histogram{}, st, fmt.Errorf("cannot make a histogram of %d buckets (at most %d): use a larger interval or a shorter range", n, MaxBuckets)
	}
	h.Counts = make([][7]int64, n)
	r := newRunner(store, &q, nil, &st)
	r.f.countOnly = true
	defer r.decoders.close()
	from, iv := h.From.UnixNano(), int64(interval)
	err := r.walk(ctx, func(ctx context.Context, cands []candidate) error {
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
				h.Counts[(s.t-from)/iv][s.info.level]++
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
