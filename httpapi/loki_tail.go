package httpapi

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/gobwas/ws"
	"github.com/valyala/fasthttp"

	"ingest/logline"
	"ingest/logql"
	"ingest/query"
)

// Loki's live tail, a WebSocket, over the server's live tail (liveTail).

const (
	// lokiTailMessageBytes is about the largest message the tail sends:
	// a message is sent once it holds that much.
	lokiTailMessageBytes = 64 << 10
	// lokiTailBackfillBytes bounds the events of the first message kept
	// in memory to be sent oldest first; past it, the older ones are left
	// out.
	lokiTailBackfillBytes = 4 << 20
)

// levelLabelBytes are levelLabels as bytes, for the matchers.
var levelLabelBytes = func() (out [len(levelLabels)][]byte) {
	for i, l := range levelLabels {
		out[i] = []byte(l)
	}
	return out
}()

// lokiTail handles the WebSocket GET /loki/api/v1/tail?query=<selector and
// line filters>[&start=T][&limit=N]: first the newest limit (100) events
// of [start, now) that match, start an hour ago by default, oldest first;
// then each event this instance accepts from then on that matches. Each
// message is {"streams":[...]} as in a query's answer; events lost because
// the client fell behind are a message {"streams":[],"dropped_entries":
// [{"labels":{},"timestamp":"<ns>"}]} where the gap is, one entry per gap.
// An idle tail sends a ping every tailHeartbeat; shutting down closes it
// with 1001 (going away). delay_for is taken and not needed: events reach
// the tail once accepted.
func (s *Server) lokiTail(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	now := time.Now()
	lq, err := parseLogQL(args)
	if err == nil && lq.Kind != logql.Logs {
		err = badLoki("cannot tail a metric query: tail a selector and line filters, like {service=\"api\"} |= \"error\"")
	}
	var start time.Time
	var limit int
	var accept string
	var sub liveSub
	if err == nil {
		start, err = lokiTime("start", args.Peek("start"), now.Add(-time.Hour))
	}
	if err == nil {
		limit, err = lokiLimit(args)
	}
	if err == nil {
		accept, err = wsHandshake(ctx)
	}
	if err == nil {
		sub, err = hubTail{s}.follow(tailServices(lq))
	}
	if err != nil {
		lokiError(ctx, err)
		return
	}
	wsAnswer(ctx, accept)
	ctx.Hijack(func(c net.Conn) {
		defer s.recoverStream("/loki/api/v1/tail")
		defer sub.close()
		wc := newWSConn(c)
		s.goGuarded("/loki/api/v1/tail", wc.read)
		// However this ends, a panic included, the connection is closed
		// (close runs once: this one only after a panic) and its reader
		// has ended before it goes back to fasthttp.
		defer func() {
			wc.close(ws.StatusInternalServerError, errInternal)
			<-wc.gone
		}()
		code, reason := ws.StatusNormalClosure, ""
		if err := s.lokiTailBackfill(wc, lq, start, now, limit); err != nil {
			code, reason = ws.StatusInternalServerError, err.Error()
		} else if !s.lokiTailLive(wc, sub, lq) {
			code, reason = ws.StatusGoingAway, "shutting down: tail another instance"
		}
		wc.close(code, reason)
	})
}

// tailServices are the services to follow: the one an = matcher names,
// else all (the matchers are checked on each event).
func tailServices(lq *logql.Query) []string {
	for _, m := range lq.Only("service") {
		if m.Op == logql.Eq {
			return []string{string(logline.AppendService(nil, []byte(m.Value)))}
		}
	}
	return nil
}

// lokiTailLive sends the matching events of sub until the client goes
// away (true) or the subscription ends (false).
func (s *Server) lokiTailLive(wc *wsConn, sub liveSub, lq *logql.Query) bool {
	var en streamsEncoder
	msg := []byte(`{"streams":[`)
	var err error
	last := time.Now() // of the last message
	send := func() {
		if en.entries > 0 && err == nil {
			err = wc.write(ws.OpText, append(en.end(msg), "]}"...))
			last = time.Now()
		}
		msg = append(msg[:0], `{"streams":[`...)
	}
	for {
		dropped, open := sub.next(s.tail.heartbeat, func(e *logline.Event) {
			if err != nil || !lq.Matches(e.Service, e.Host, levelLabelBytes[e.Level%logline.Level(len(levelLabels))]) || !lq.Keep(e.Message) {
				return
			}
			if msg = en.add(msg, e); len(msg) >= lokiTailMessageBytes {
				send()
			}
		})
		send()
		switch {
		case err != nil:
			return true
		case dropped > 0:
			b := strconv.AppendInt([]byte(`{"streams":[],"dropped_entries":[{"labels":{},"timestamp":"`), time.Now().UnixNano(), 10)
			err, last = wc.write(ws.OpText, append(b, `"}]}`...)), time.Now()
		case open && time.Since(last) >= s.tail.heartbeat:
			err, last = wc.write(ws.OpPing, nil), time.Now() // a client gone is noticed
		}
		if !open {
			return false
		}
		select {
		case <-wc.gone:
			return true
		default:
		}
	}
}

// errBackfillFull stops the first message's query at its memory bound.
var errBackfillFull = errors.New("tail backfill full")

// lokiTailBackfill sends the newest limit events of [start, end) that lq
// matches, oldest first, in messages of about lokiTailMessageBytes.
func (s *Server) lokiTailBackfill(wc *wsConn, lq *logql.Query, start, end time.Time, limit int) error {
	if !start.Before(end) {
		return nil
	}
	q, none, err := s.lokiSelection(context.Background(), lq, start, end)
	if err != nil || none {
		return err
	}
	q.Desc, q.Limit = true, limit
	// The newest come first: keep them (copied into one arena) and send
	// them in reverse.
	type kept struct {
		t                 int64
		level             logline.Level
		svc, host, msgEnd int
	}
	var arena []byte
	var evs []kept
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-wc.gone:
			cancel()
		case <-c.Done():
		}
	}()
	st, err := query.Run(c, s.deps.Blobs, q, func(_ []byte, e *logline.Event) error {
		if len(arena)+len(e.Service)+len(e.Host)+len(e.Message) > lokiTailBackfillBytes {
			return errBackfillFull
		}
		arena = append(arena, e.Service...)
		k := kept{t: e.Time, level: e.Level, svc: len(arena)}
		arena = append(arena, e.Host...)
		k.host = len(arena)
		arena = append(arena, e.Message...)
		k.msgEnd = len(arena)
		evs = append(evs, k)
		return nil
	})
	s.met.blobsSkipped.Add(float64(st.BlobsSkipped))
	s.met.blobsRead.Add(float64(st.BlobsRead))
	if err != nil && !errors.Is(err, errBackfillFull) {
		return err
	}
	var en streamsEncoder
	msg := []byte(`{"streams":[`)
	var e logline.Event
	for i := len(evs) - 1; i >= 0; i-- {
		k, from := evs[i], 0
		if i > 0 {
			from = evs[i-1].msgEnd
		}
		e.Time, e.Level = k.t, k.level
		e.Service, e.Host, e.Message = arena[from:k.svc], arena[k.svc:k.host], arena[k.host:k.msgEnd]
		if msg = en.add(msg, &e); len(msg) >= lokiTailMessageBytes || i == 0 {
			if err := wc.write(ws.OpText, append(en.end(msg), "]}"...)); err != nil {
				return nil // the client went away
			}
			msg = append(msg[:0], `{"streams":[`...)
		}
	}
	return nil
}
