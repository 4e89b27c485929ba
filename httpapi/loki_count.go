package httpapi

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/logql"
	"ingest/query"
)

// lokiCount answers a volume query, sum by (level) (count_over_time(<sel>
// [range])), from the engine's histogram. As an instant query (at = start
// = end) it is the events of [at - range, at) per series, a vector; as a
// range query the events of [t - range, t) at each point t, a matrix, the
// points every step from the first multiple of the histogram's interval at
// or after start up to end. The histogram's interval divides both range
// and step, so each window is a run of whole buckets: the counts are exact.
// Range and step are whole seconds (rounded up), at most lokiMaxStep.
func (s *Server) lokiCount(ctx *fasthttp.RequestCtx, lq *logql.Query, start, end time.Time, step time.Duration, instant bool) {
	if !s.enterQuery(ctx) {
		return
	}
	defer s.queries.leave()
	rng := (lq.Range + time.Second - 1).Truncate(time.Second)
	if rng > lokiMaxStep {
		lokiError(ctx, badLoki("cannot count over a range of %s: at most %s", rng, lokiMaxStep))
		return
	}
	iv := rng
	if !instant {
		iv = time.Duration(gcd(int64(rng/time.Second), int64(step/time.Second))) * time.Second
	}
	from := start.Add(-rng)
	if from.Before(lokiMinTime) {
		from = lokiMinTime
	}
	// In seconds, before any histogram is made: the range is clamped to
	// the stored years, which seconds hold.
	if n := (end.Unix()-from.Unix())/int64(iv/time.Second) + 2; n > query.MaxBuckets {
		lokiError(ctx, badLoki("cannot count %d intervals of %s (at most %d): raise the step, or shorten the range", n, iv, query.MaxBuckets))
		return
	}
	q, none, err := s.lokiSelection(context.Background(), lq, from, end)
	if err != nil {
		lokiError(ctx, err)
		return
	}
	var h query.Histogram
	if !none && from.Before(end) {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var st query.Stats
		h, st, err = query.RunHistogram(c, s.deps.Blobs, q, iv)
		s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
		s.met.blobsRead.Add(float64(st.BlobsRead))
		if err != nil {
			if httperr.StatusOf(err) == fasthttp.StatusInternalServerError {
				err = &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: err.Error(), Err: err}
			}
			lokiError(ctx, err)
			return
		}
	}
	// Inclusive running sums, in place: a window's count is the difference
	// of two.
	for i := 1; i < len(h.Counts); i++ {
		for l := range h.Counts[i] {
			h.Counts[i][l] += h.Counts[i-1][l]
		}
	}
	b := []byte(`{"status":"success","data":{"resultType":"matrix","result":[`)
	if instant {
		b = append(b[:len(b)-len(`matrix","result":[`)], `vector","result":[`...)
	}
	first := true
	for _, sr := range countSeries(lq) {
		b = appendCountSeries(b, &h, sr, instant, start, end, step, rng, &first)
	}
	lokiJSON(ctx, append(b, "]}}\n"...))
}

// countSeries are the series of a volume query: one per level when grouped
// by level (LevelNone, no level, is the series without labels), else one
// of every level (all set).
type countSerie struct {
	level logline.Level
	all   bool
}

func countSeries(lq *logql.Query) []countSerie {
	if len(lq.By) == 0 {
		return []countSerie{{all: true}}
	}
	out := make([]countSerie, 0, len(levelLabels))
	for l := range levelLabels {
		out = append(out, countSerie{level: logline.Level(l)})
	}
	return out
}

// windowSum is the serie's count over buckets [lo, hi) of running sums.
func (sr countSerie) windowSum(h *query.Histogram, lo, hi int) int64 {
	var n int64
	for l := range h.Counts[0] {
		if !sr.all && logline.Level(l) != sr.level {
			continue
		}
		n += h.Counts[hi-1][l]
		if lo > 0 {
			n -= h.Counts[lo-1][l]
		}
	}
	return n
}

// appendCountSeries appends a serie's points that are not zero (Loki has
// no point where nothing was counted); nothing when all are.
func appendCountSeries(b []byte, h *query.Histogram, sr countSerie, instant bool, start, end time.Time, step, rng time.Duration, first *bool) []byte {
	mark := len(b)
	if !*first {
		b = append(b, ',')
	}
	b = append(b, `{"metric":{`...)
	if !sr.all && sr.level != logline.LevelNone {
		b = append(b, `"level":"`+sr.level.String()+`"`...)
	}
	points := 0
	if instant {
		if n := len(h.Counts); n > 0 {
			if v := sr.windowSum(h, 0, n); v > 0 {
				b = appendLokiPoint(append(b, `},"value":`...), end, float64(v))
				points++
			}
		}
	} else {
		b = append(b, `},"values":[`...)
		base, ivs := h.From.Unix(), int64(h.Interval/time.Second)
		if ivs > 0 {
			startS := start.Unix()
			if start.Nanosecond() > 0 {
				startS++
			}
			t := base + (startS-base+ivs-1)/ivs*ivs // the first bucket edge at or after start
			for ; t <= end.Unix(); t += int64(step / time.Second) {
				hi := int((t - base) / ivs)
				lo := max(0, hi-int(int64(rng/time.Second)/ivs))
				if hi == 0 || hi > len(h.Counts) {
					continue
				}
				if v := sr.windowSum(h, lo, hi); v > 0 {
					if points > 0 {
						b = append(b, ',')
					}
					b = appendLokiPoint(b, time.Unix(t, 0), float64(v))
					points++
				}
			}
		}
		b = append(b, ']')
	}
	if points == 0 {
		return b[:mark]
	}
	*first = false
	return append(b, '}')
}

// gcd is the greatest common divisor of a and b, both > 0.
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
