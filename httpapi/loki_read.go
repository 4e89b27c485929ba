package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
	"ingest/logline"
	"ingest/logql"
	"ingest/query"
)

// Loki's query API over the query engine, for Grafana's Loki data source
// (docs/grafana.md). A stored event is a Loki log line: its labels are
// service, host and level (an empty host or level is no label), its line
// the message, its timestamp the event time in nanoseconds. Attributes are
// not labels: each distinct set of values would be a stream of its own.

// lokiError answers err in Loki's error form, {"code","status","message"},
// whose message Grafana shows; its status is the one err carries.
func lokiError(ctx *fasthttp.RequestCtx, err error) {
	status := httperr.StatusOf(err)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := strconv.AppendInt([]byte(`{"code":`), int64(status), 10)
	b = append(b, `,"status":"error","message":`...)
	b = logline.AppendQuoted(b, []byte(err.Error()))
	ctx.SetBody(append(b, "}\n"...))
}

// parseLogQL parses the query parameter; a query outside the subset is a
// 400 naming the subset.
func parseLogQL(args *fasthttp.Args) (*logql.Query, error) {
	q, err := logql.Parse(string(args.Peek("query")))
	if err != nil {
		return nil, badLoki("%s", err.Error())
	}
	return q, nil
}

// lokiQueryRange handles GET /loki/api/v1/query_range: log lines as
// streams, the volume as a matrix, a constant as a matrix.
func (s *Server) lokiQueryRange(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	lq, err := parseLogQL(args)
	var start, end time.Time
	if err == nil {
		start, end, err = lokiRange(args, time.Hour)
	}
	if err != nil {
		lokiError(ctx, err)
		return
	}
	if lq.Kind == logql.Logs {
		s.lokiStreams(ctx, lq, start, end)
		return
	}
	step, err := lokiStep(args, start, end)
	if err != nil {
		lokiError(ctx, err)
		return
	}
	if lq.Kind == logql.Const {
		b := append([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[`), lokiConstPoints(nil, lq.Value, start, end, step)...)
		lokiJSON(ctx, append(b, "]}]}}\n"...))
		return
	}
	s.lokiCount(ctx, lq, start, end, step, false)
}

// lokiQuery handles GET /loki/api/v1/query, an instant query: the volume
// at time as a vector, a constant (the health check) as a vector or a
// scalar. Log lines are asked for with query_range.
func (s *Server) lokiQuery(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	lq, err := parseLogQL(args)
	var at time.Time
	if err == nil {
		at, err = lokiTime("time", args.Peek("time"), time.Now())
	}
	if err == nil && lq.Kind == logql.Logs {
		err = badLoki("cannot run a log query as an instant query: ask /loki/api/v1/query_range for log lines")
	}
	if err != nil {
		lokiError(ctx, err)
		return
	}
	switch lq.Kind {
	case logql.Const:
		b := []byte(`{"status":"success","data":{"resultType":"scalar","result":`)
		if lq.Vector {
			b = append(b[:len(b)-len(`scalar","result":`)], `vector","result":[{"metric":{},"value":`...)
		}
		b = appendLokiPoint(b, at, lq.Value)
		if lq.Vector {
			b = append(b, "}]"...)
		}
		lokiJSON(ctx, append(b, "}}\n"...))
	case logql.Count:
		s.lokiCount(ctx, lq, at, at, 0, true)
	}
}

// lokiJSON answers 200 with the JSON body b.
func lokiJSON(ctx *fasthttp.RequestCtx, b []byte) {
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// lokiStreams answers a log query over [start, end) as Loki's streams,
// written as the engine hands out the events.
func (s *Server) lokiStreams(ctx *fasthttp.RequestCtx, lq *logql.Query, start, end time.Time) {
	args := ctx.QueryArgs()
	limit, err := lokiLimit(args)
	var backward, none bool
	if err == nil {
		backward, err = lokiBackward(args)
	}
	if err != nil {
		lokiError(ctx, err)
		return
	}
	if !s.enterQuery(ctx) {
		return
	}
	q, none, err := s.lokiSelection(context.Background(), lq, start, end)
	if err != nil {
		s.queries.leave()
		lokiError(ctx, err)
		return
	}
	q.Limit, q.Desc = limit, backward
	none = none || !start.Before(end)
	store := s.deps.Blobs
	ctx.SetContentType("application/json")
	ctx.SetStatusCode(fasthttp.StatusOK)
	s.streamBody(ctx, s.queries.leave, func(w *bufio.Writer) {
		began := time.Now()
		sw := streamsWriter{w: w}
		w.WriteString(`{"status":"success","data":{"resultType":"streams","result":[`)
		var st query.Stats
		var err error
		if !none {
			qctx, cancel := context.WithTimeout(context.Background(), maxQueryTime)
			st, err = query.Run(qctx, store, q, func(_ []byte, e *logline.Event) error { return sw.add(e) })
			cancel()
			s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
			s.met.blobsRead.Add(float64(st.BlobsRead))
		}
		sw.end(&st, time.Since(began), err)
	})
}

// streamsEncoder appends events as the result entries of a streams
// answer. Events come in time order across label sets, so a run of events
// of one label set is one entry: a label set may have several entries,
// and no event waits in memory for the others of its set.
type streamsEncoder struct {
	entries int // entries opened
	svc     []byte
	host    []byte
	level   logline.Level
}

// add appends e, opening an entry when its labels differ from the
// previous event's.
func (en *streamsEncoder) add(b []byte, e *logline.Event) []byte {
	if en.entries == 0 || e.Level != en.level || !bytes.Equal(e.Service, en.svc) || !bytes.Equal(e.Host, en.host) {
		if en.entries > 0 {
			b = append(b, "]},"...)
		}
		en.entries++
		b = append(b, `{"stream":`...)
		b = appendLokiLabels(b, e.Service, e.Host, e.Level)
		b = append(b, `,"values":[`...)
		en.svc, en.host, en.level = append(en.svc[:0], e.Service...), append(en.host[:0], e.Host...), e.Level
	} else {
		b = append(b, ',')
	}
	b = append(b, `["`...)
	b = strconv.AppendInt(b, e.Time, 10)
	b = append(b, `",`...)
	b = logline.AppendQuoted(b, e.Message)
	return append(b, ']')
}

// end closes the open entry, if any, and starts afresh.
func (en *streamsEncoder) end(b []byte) []byte {
	if en.entries > 0 {
		b = append(b, "]}"...)
	}
	en.entries = 0
	return b
}

// streamsWriter writes a streams answer as the engine hands out events.
type streamsWriter struct {
	w   *bufio.Writer
	buf []byte
	en  streamsEncoder
}

func (sw *streamsWriter) add(e *logline.Event) error {
	sw.buf = sw.en.add(sw.buf[:0], e)
	_, err := sw.w.Write(sw.buf)
	return err
}

// end closes the answer with the scan figures, and err, if any, as a
// warning: the headers are gone, and Grafana shows a response's warnings.
func (sw *streamsWriter) end(st *query.Stats, took time.Duration, err error) {
	b := sw.en.end(sw.buf[:0])
	b = append(b, `],"stats":{"summary":{"execTime":`...)
	b = strconv.AppendFloat(b, took.Seconds(), 'f', 6, 64)
	b = append(b, `,"totalBytesProcessed":`...)
	b = strconv.AppendInt(b, st.BytesDecoded, 10)
	b = append(b, `,"totalLinesProcessed":`...)
	b = strconv.AppendInt(b, st.LinesScanned, 10)
	b = append(b, `,"totalEntriesReturned":`...)
	b = strconv.AppendInt(b, st.LinesReturned, 10)
	b = append(b, "}}}"...)
	if err != nil {
		b = append(b, `,"warnings":[`...)
		b = logline.AppendQuoted(b, []byte("the answer is incomplete: "+err.Error()))
		b = append(b, ']')
	}
	sw.w.Write(append(b, "}\n"...))
}

// appendLokiLabels appends an event's labels as a JSON object, sorted by
// name; an empty host or level is no label.
func appendLokiLabels(b, service, host []byte, level logline.Level) []byte {
	b = append(b, '{')
	if len(host) > 0 {
		b = append(b, `"host":`...)
		b = logline.AppendQuoted(b, host)
		b = append(b, ',')
	}
	if level != logline.LevelNone {
		b = append(b, `"level":"`...)
		b = append(b, level.String()...)
		b = append(b, `",`...)
	}
	b = append(b, `"service":`...)
	b = logline.AppendQuoted(b, service)
	return append(b, '}')
}

// appendLokiPoint appends [<Unix seconds>,"<value>"], the seconds with
// their milliseconds as Loki writes them.
func appendLokiPoint(b []byte, t time.Time, v float64) []byte {
	b = append(b, '[')
	b = strconv.AppendFloat(b, float64(t.UnixMilli())/1000, 'f', -1, 64)
	b = append(b, `,"`...)
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	return append(b, `"]`...)
}

// lokiConstPoints appends the points of a constant from start to end,
// every step (lokiStep bounded their number).
func lokiConstPoints(b []byte, v float64, start, end time.Time, step time.Duration) []byte {
	for t := start; !t.After(end); t = t.Add(step) {
		if t != start {
			b = append(b, ',')
		}
		b = appendLokiPoint(b, t, v)
	}
	return b
}
