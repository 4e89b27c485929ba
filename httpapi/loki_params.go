package httpapi

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/logql"
	"ingest/query"
)

// The bounds of Loki read requests, checked before any arithmetic on them.
const (
	// lokiDefaultLimit and lokiMaxLimit are Loki's default and its default
	// max_entries_limit_per_query: the lines one answer holds.
	lokiDefaultLimit = 100
	lokiMaxLimit     = 5000
	// lokiMaxPoints is Loki's limit of points per series of a matrix.
	lokiMaxPoints = 11000
	// lokiMaxStep is the largest step and range of a count, the
	// histogram's largest interval.
	lokiMaxStep = 31 * 24 * time.Hour
)

// The times a blob can hold (stored times are Unix nanoseconds): request
// times are clamped to them as they are parsed, so every later
// computation holds in nanoseconds.
var (
	lokiMinTime = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	lokiMaxTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// badLoki is a 400 for a Loki read request.
func badLoki(format string, args ...any) error {
	return &httperr.Error{Status: fasthttp.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// lokiTime parses a Loki time parameter as Loki does: a number with a
// '.' is Unix seconds, an integer of up to 10 digits Unix seconds, a
// longer one Unix nanoseconds, anything else RFC 3339. Empty is def.
func lokiTime(name string, v []byte, def time.Time) (time.Time, error) {
	s := string(v)
	var t time.Time
	switch {
	case s == "":
		t = def
	case strings.Contains(s, "."):
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return t, badLoki("bad %s %q: want Unix nanoseconds, Unix seconds or RFC 3339", name, s)
		}
		// Bounded before the conversion: ±1e11 s is past either stored end.
		f = max(-1e11, min(f, 1e11))
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err == nil && len(strings.TrimPrefix(s, "-")) <= 10:
			t = time.Unix(n, 0)
		case err == nil:
			t = time.Unix(0, n)
		default:
			if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
				return t, badLoki("bad %s %q: want Unix nanoseconds, Unix seconds or RFC 3339", name, s)
			}
		}
	}
	switch {
	case t.Before(lokiMinTime):
		t = lokiMinTime
	case t.After(lokiMaxTime):
		t = lokiMaxTime
	}
	return t.UTC(), nil
}

// lokiRange reads start and end (end defaults to now, start to since
// before end) and checks that end is not before start.
func lokiRange(args *fasthttp.Args, since time.Duration) (start, end time.Time, err error) {
	if end, err = lokiTime("end", args.Peek("end"), time.Now()); err != nil {
		return
	}
	if start, err = lokiTime("start", args.Peek("start"), end.Add(-since)); err != nil {
		return
	}
	if end.Before(start) {
		err = badLoki("bad range: end %s is before start %s", end.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
	}
	return
}

// lokiLimit reads limit: lokiDefaultLimit when absent, at most
// lokiMaxLimit.
func lokiLimit(args *fasthttp.Args) (int, error) {
	v := args.Peek("limit")
	if len(v) == 0 {
		return lokiDefaultLimit, nil
	}
	n, err := strconv.Atoi(string(v))
	switch {
	case err != nil || n <= 0:
		return 0, badLoki("bad limit %q: want a number from 1 to %d", v, lokiMaxLimit)
	case n > lokiMaxLimit:
		return 0, badLoki("cannot return %d lines: at most %d lines per query; lower the limit (Grafana: the data source's Maximum lines)", n, lokiMaxLimit)
	}
	return n, nil
}

// lokiBackward reads direction: backward (newest first, the default) or
// forward.
func lokiBackward(args *fasthttp.Args) (bool, error) {
	switch v := string(args.Peek("direction")); strings.ToLower(v) {
	case "", "backward":
		return true, nil
	case "forward":
		return false, nil
	default:
		return false, badLoki("bad direction %q: want backward or forward", v)
	}
}

// lokiStep reads step, Unix seconds (a number) or a duration (15s,
// 60000ms), rounded up to whole seconds (the histogram's unit); absent, it
// is Loki's default, the range over 250 and at least 1s. The range over
// the step is at most lokiMaxPoints.
func lokiStep(args *fasthttp.Args, start, end time.Time) (time.Duration, error) {
	v := string(args.Peek("step"))
	var step time.Duration
	switch f, err := strconv.ParseFloat(v, 64); {
	case v == "":
		step = max(time.Second, end.Sub(start)/250)
	case err == nil:
		if !(f > 0) || f > float64(lokiMaxStep/time.Second) {
			return 0, badLoki("bad step %q: want from 1s to %s", v, lokiMaxStep)
		}
		step = time.Duration(math.Ceil(f)) * time.Second
	default:
		if step, err = logql.ParseDuration(v); err != nil || step == 0 {
			return 0, badLoki("bad step %q: want seconds or a duration like 15s", v)
		}
	}
	step = (step + time.Second - 1).Truncate(time.Second)
	if step > lokiMaxStep {
		return 0, badLoki("bad step %s: at most %s", step, lokiMaxStep)
	}
	// In seconds: the stored range is 584 years, less than int64 seconds hold.
	if points := (end.Unix() - start.Unix()) / int64(step/time.Second); points >= lokiMaxPoints {
		return 0, badLoki("cannot answer %d points per series: at most %d; raise the step (or shorten the range)", points+1, lokiMaxPoints)
	}
	return step, nil
}

// levelLabels are the level label's values, indexed by logline.Level
// (LevelNone: no label, the empty value).
var levelLabels = [...]string{"", "trace", "debug", "info", "warn", "error", "fatal"}

// lokiSelection is a LogQL query's selector and line filters as a query of
// the engine: services from the service matchers over the services there
// are, levels as a set, the host and the line filters as functions. none
// means no event can match (a matcher no service or level passes).
func (s *Server) lokiSelection(ctx context.Context, lq *logql.Query, from, to time.Time) (q query.Query, none bool, err error) {
	q = query.Query{From: from, To: to, Config: s.deps.Query}
	if q.Services, err = s.lokiServices(ctx, lq); err != nil || len(q.Services) == 0 {
		return q, true, err
	}
	if lv := lq.Only("level"); len(lv) > 0 {
		for l, name := range levelLabels {
			if matchAll(lv, []byte(name)) {
				q.Levels = q.Levels.Add(logline.Level(l))
			}
		}
		if q.Levels == 0 {
			return q, true, nil
		}
	}
	if hosts := lq.Only("host"); len(hosts) > 0 {
		q.Host = func(h []byte) bool { return matchAll(hosts, h) }
	}
	// The first plain "contains" filter is the engine's Text, which it
	// looks for in whole read buffers; the other filters are Keep.
	rest := *lq
	rest.Pipeline = nil
	for _, st := range lq.Pipeline {
		if st.Filter && st.Op == logql.Eq && q.Text == "" && st.Value != "" {
			q.Text = st.Value
		} else if st.Filter {
			rest.Pipeline = append(rest.Pipeline, st)
		}
	}
	if len(rest.Pipeline) > 0 {
		q.Keep = rest.Keep
	}
	return q, false, nil
}

// lokiServices lists the services the service matchers of lq select: the
// one an = names, without a listing; every service ("*") when there is no
// matcher or every service passes; else those of query.Services that pass.
func (s *Server) lokiServices(ctx context.Context, lq *logql.Query) ([]string, error) {
	ms := lq.Only("service")
	if len(ms) == 0 {
		return []string{"*"}, nil
	}
	for _, m := range ms {
		if m.Op == logql.Eq {
			if m.Value == "" || !matchAll(ms, []byte(m.Value)) {
				return nil, nil
			}
			return []string{m.Value}, nil
		}
	}
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	all, err := query.Services(c, s.deps.Blobs)
	if err != nil {
		return nil, &httperr.Error{Status: fasthttp.StatusServiceUnavailable, Msg: err.Error(), Err: err}
	}
	var out []string
	for _, name := range all {
		if matchAll(ms, []byte(name)) {
			out = append(out, name)
		}
	}
	if len(out) == len(all) && len(out) > 0 {
		return []string{"*"}, nil
	}
	return out, nil
}

// matchAll reports whether v passes every matcher of ms.
func matchAll(ms []logql.Matcher, v []byte) bool {
	for i := range ms {
		if !ms[i].Matches(v) {
			return false
		}
	}
	return true
}
