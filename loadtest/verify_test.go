package loadtest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// querySink adds a query API to the fake server that loses and duplicates
// chosen ids, so the verification's diffing can be checked exactly. It
// tests the reading and counting, not any storage.
type querySink struct {
	*sink
	lose, dup   func(id string) bool
	failService string // its query answers 500
	t           *testing.T
	from, to    []string
}

func (q *querySink) handle(ctx *fasthttp.RequestCtx) {
	if ctx.IsPost() {
		q.sink.handle(ctx)
		return
	}
	path := string(ctx.Path())
	args := ctx.QueryArgs()
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []string
	arrayOut := false
	switch {
	case path == "/v1/logs":
		svc := string(args.Peek("service"))
		if svc == q.failService {
			ctx.Error("storage unavailable", fasthttp.StatusInternalServerError)
			return
		}
		for _, k := range []string{"from", "to"} {
			if _, err := time.Parse(time.RFC3339, string(args.Peek(k))); err != nil {
				q.t.Errorf("query %s: bad %s: %v", ctx.QueryArgs(), k, err)
			}
		}
		if string(args.Peek("limit")) != "0" {
			q.t.Errorf("query %s: want limit=0", ctx.QueryArgs())
		}
		q.from = append(q.from, string(args.Peek("from")))
		q.to = append(q.to, string(args.Peek("to")))
		ids = q.logs[svc]
	case strings.HasPrefix(path, "/v1/logins/"):
		user := strings.TrimPrefix(path, "/v1/logins/")
		ids = q.logins[user]
		if len(ids) == 0 {
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			return
		}
		// Half the users answer as a JSON array, to check the tolerance.
		arrayOut = len(user)%2 == 0
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return
	}
	var out []string
	// Someone else's events share the window.
	out = append(out, `{"id":"other-m000000000001","service":"api","message":"not ours"}`)
	for _, id := range ids {
		if q.lose(id) {
			continue
		}
		rec := fmt.Sprintf(`{"ts":"2026-01-01T00:00:00Z","id":%q,"message":"x","user":"u"}`, id)
		out = append(out, rec)
		if q.dup(id) {
			out = append(out, rec)
		}
	}
	if arrayOut {
		ctx.SetContentType("application/json")
		ctx.SetBodyString("[" + strings.Join(out, ",") + "]")
		return
	}
	ctx.SetContentType("application/x-ndjson")
	ctx.SetBodyString(strings.Join(out, "\n") + "\nnot json\n")
}

func TestVerify(t *testing.T) {
	q := &querySink{sink: newSink(t), t: t}
	// Lose every 97th and duplicate every 101st id; the attack's id space
	// loses every 13th.
	seqOf := func(id string) (byte, int) {
		var n int
		fmt.Sscan(id[len(id)-seqWidth:], &n)
		return id[len(id)-seqWidth-1], n
	}
	q.lose = func(id string) bool {
		s, n := seqOf(id)
		return (s == streamMain && n%97 == 0) || (s == streamAttack && n%13 == 0)
	}
	q.dup = func(id string) bool { _, n := seqOf(id); return n%101 == 1 }
	cfg := quickConfig(startServer(t, q.handle))
	cfg.Events = 5000
	cfg.LoginsRatio = 0.3
	cfg.AttackUser = "victim"
	cfg.AttackRate = 1000
	cfg.Verify = true
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verify
	if v == nil {
		t.Fatalf("no verify report (%s)", rep.VerifyErr)
	}
	if rep.VerifyErr != "" {
		t.Errorf("verify error: %s", rep.VerifyErr)
	}
	var wantLost, wantDup, wantLoginsLost int64
	for id := range q.ids {
		if q.lose(id) {
			wantLost++
			if s, _ := seqOf(id); s == streamAttack {
				wantLoginsLost++
			}
		} else if q.dup(id) {
			wantDup++
		}
	}
	if v.Sent != rep.EventsSent || v.Accepted != rep.EventsAccepted || v.Found != v.Accepted-wantLost {
		t.Errorf("sent %d accepted %d found %d; report sent %d accepted %d, %d lost", v.Sent, v.Accepted, v.Found, rep.EventsSent, rep.EventsAccepted, wantLost)
	}
	if v.Lost != wantLost || v.Duplicated != wantDup || v.Copies != wantDup {
		t.Errorf("lost %d duplicated %d copies %d, want %d %d %d", v.Lost, v.Duplicated, v.Copies, wantLost, wantDup, wantDup)
	}
	if v.Logs.Lost+v.Logins.Lost != v.Lost || v.Logins.Lost < wantLoginsLost || v.Logs.Accepted+v.Logins.Accepted != v.Accepted {
		t.Errorf("split %+v / %+v does not add up to %d lost", v.Logs, v.Logins, v.Lost)
	}
	if v.Unacked != 0 || v.Foreign != 0 {
		t.Errorf("unacked %d foreign %d", v.Unacked, v.Foreign)
	}
	if len(v.LostSample) == 0 || !q.lose(v.LostSample[0]) || len(v.DupSample) == 0 || !q.dup(v.DupSample[0]) {
		t.Errorf("samples: lost %v dup %v", v.LostSample, v.DupSample)
	}
	if v.BadLines == 0 {
		t.Errorf("the garbage lines were not counted")
	}
	// The window covers the run, padded by a minute each side.
	for i := range q.from {
		from, _ := time.Parse(time.RFC3339, q.from[i])
		to, _ := time.Parse(time.RFC3339, q.to[i])
		if !from.Before(rep.Start.Add(-59*time.Second)) || !to.After(rep.End.Add(59*time.Second)) {
			t.Errorf("window [%s, %s) does not cover the run %s..%s with a minute's margin", q.from[i], q.to[i], rep.Start, rep.End)
		}
	}
	if len(q.from) != cfg.Services {
		t.Errorf("%d log queries, want one per service (%d)", len(q.from), cfg.Services)
	}
}

// TestVerifyPartialAndFailed: lines the server refused are not expected
// back, and a failing query makes the verdict an error, not silence.
func TestVerifyPartialAndFailed(t *testing.T) {
	q := &querySink{sink: newSink(t), t: t, lose: func(string) bool { return false }, dup: func(string) bool { return false }}
	q.failService = "checkout"
	q.before = func(ctx *fasthttp.RequestCtx, post int) bool {
		if post != 2 {
			return false
		}
		// Accept the batch but refuse lines 1 and 3: store the others.
		body := ctx.PostBody()
		lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
		var p fastjson.Parser
		q.mu.Lock()
		for i, line := range lines {
			if i == 0 || i == 2 {
				continue
			}
			v, _ := p.Parse(line)
			svc := string(v.GetStringBytes("service"))
			q.logs[svc] = append(q.logs[svc], string(v.GetStringBytes("id")))
		}
		q.mu.Unlock()
		ctx.SetStatusCode(fasthttp.StatusAccepted)
		ctx.SetBodyString(fmt.Sprintf(`{"accepted":%d,"rejected":2,"errors":[{"line":1,"error":"bad"},{"line":3,"error":"bad"}]}`, len(lines)-2))
		return true
	}
	cfg := quickConfig(startServer(t, q.handle))
	cfg.Events = 1000
	cfg.LoginsRatio = 0
	cfg.Concurrency = 1
	cfg.Verify = true
	rep, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verify
	if v.Accepted != 998 || v.Sent != 1000 {
		t.Errorf("accepted %d of %d, want 998 of 1000", v.Accepted, v.Sent)
	}
	if !strings.Contains(rep.VerifyErr, "1 of") || len(v.Failed) != 1 || !strings.Contains(v.Failed[0], "checkout") {
		t.Errorf("verify error %q, failed %v", rep.VerifyErr, v.Failed)
	}
	// Only checkout's events can be missing.
	var checkout int64
	for _, id := range q.logs["checkout"] {
		_ = id
		checkout++
	}
	if v.Lost != checkout {
		t.Errorf("lost %d, want checkout's %d", v.Lost, checkout)
	}
}

// TestReadBackFormats feeds readBack every answer shape it accepts.
func TestReadBackFormats(t *testing.T) {
	answers := map[string]string{
		"/ndjson":  "{\"id\":\"a\"}\n\n{\"id\":\"b\"}\r\n{\"id\":\"c\"}",
		"/array":   " [ {\"id\":\"a\"}, {\"id\":\"b\"}, 3 ]",
		"/wrapped": `{"count":2,"events":[{"id":"a"},{"id":"b"}]}`,
		"/rowkey":  `{"PartitionKey":"p","RowKey":"0799999_a"}` + "\n" + `{"RowKey":"0799998_b"}`,
		"/empty":   "",
	}
	url := startServer(t, func(ctx *fasthttp.RequestCtx) {
		if a, ok := answers[string(ctx.Path())]; ok {
			ctx.SetBodyString(a)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	})
	f := func(path string, wantIDs string, wantLines, wantBad int64) {
		t.Helper()
		var got []string
		var p fastjson.Parser
		tgt, err := parseTarget(url)
		if err != nil {
			t.Fatal(err)
		}
		lines, bad, err := newGetter(tgt, "tok").readBack(context.Background(), url+path, &p, func(id []byte) { got = append(got, string(id)) })
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.Join(got, ",") != wantIDs || lines != wantLines || bad != wantBad {
			t.Errorf("%s: ids %v lines %d bad %d, want %s %d %d", path, got, lines, bad, wantIDs, wantLines, wantBad)
		}
	}
	f("/ndjson", "a,b,c", 3, 0)
	f("/array", "a,b", 3, 1)
	f("/wrapped", "a,b", 2, 0)
	f("/rowkey", "a,b", 2, 0)
	f("/empty", "", 0, 0)
	f("/missing", "", 0, 0) // 404: nothing there
}

func TestMetricValue(t *testing.T) {
	text := []byte("# HELP ingest_buffer_bytes x\n# TYPE ingest_buffer_bytes gauge\ningest_buffer_bytes 2.39401633e+08\ningest_buffer_bytes_other 1\n")
	if v, ok := metricValue(text, "ingest_buffer_bytes"); !ok || v != 2.39401633e+08 {
		t.Fatalf("metricValue = %v, %v", v, ok)
	}
	if _, ok := metricValue(text, "ingest_missing"); ok {
		t.Fatal("found a metric that is not there")
	}
}
