package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"ingest/buffer"
	"ingest/logline"
	"ingest/query"
)

// TestTailFollowsAcceptedEvents opens GET /v1/tail, posts events of two
// services and levels, and reads back exactly the matching ones as NDJSON.
func TestTailFollowsAcceptedEvents(t *testing.T) {
	defer func(d time.Duration) { tailHeartbeat = d }(tailHeartbeat)
	tailHeartbeat = 50 * time.Millisecond // notice the reader leaving quickly
	f := newFixture(t, Config{}, buffer.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://ingest/v1/tail?service=api&level=warn&q=disk", nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("GET /v1/tail = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	waitFor(t, func() bool { return f.srv.tail.active() })
	post := func(body string) {
		if code, _, b := f.do(t, "POST", "/v1/logs", nil, []byte(body)); code != 202 {
			t.Fatalf("POST = %d %s", code, b)
		}
	}
	post(`{"service":"api","level":"error","msg":"disk full","code":507}` + "\n" +
		`{"service":"api","level":"info","msg":"disk ok"}` + "\n" +
		`{"service":"web","level":"error","msg":"disk full"}` + "\n" +
		`{"service":"api","level":"warn","msg":"cpu hot"}`)
	post(`{"service":"api","level":"fatal","msg":"disk gone","host":"h1"}`)

	sc := bufio.NewScanner(resp.Body)
	var got []map[string]any
	for len(got) < 2 && sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		got = append(got, m)
	}
	if len(got) != 2 || got[0]["message"] != "disk full" || got[0]["code"] != float64(507) || got[0]["service"] != "api" ||
		got[1]["message"] != "disk gone" || got[1]["level"] != "fatal" || got[1]["host"] != "h1" {
		t.Fatalf("tail gave %v", got)
	}
	cancel()
	waitFor(t, func() bool { return !f.srv.tail.active() })
}

func TestTailRefusesBadRequests(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	for _, c := range []struct{ path, want string }{
		{"/v1/tail", "no service"},
		{"/v1/tail?service=api&level=loud", "unknown level"},
	} {
		if code, _, body := f.do(t, "GET", c.path, nil, nil); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("GET %s = %d %s, want 400 with %q", c.path, code, body, c.want)
		}
	}
	f.srv.Drain(context.Background())
	if code, _, _ := f.do(t, "GET", "/v1/tail?service=api", nil, nil); code != 503 {
		t.Errorf("tail while draining = %d, want 503", code)
	}
}

// TestTailSlowReaderDropsNotBlocks publishes far more than a reader's queue
// holds while the reader reads nothing: publish never blocks, the excess is
// counted as dropped, and the reader then sees its events and a marker line.
func TestTailSlowReaderDropsNotBlocks(t *testing.T) {
	var dropped int
	h := tailHub{dropped: func(n int) { dropped += n }}
	r := &tailReader{services: map[string]bool{"api": true}, queue: make(chan tailChunk, tailQueueChunks), done: make(chan struct{})}
	other := &tailReader{services: map[string]bool{"web": true}, queue: make(chan tailChunk, tailQueueChunks), done: make(chan struct{})}
	h.add(r)
	h.add(other)
	var b buffer.Batch
	g := b.Group(buffer.StreamLogs, []byte("api/2026/11/21/1600"))
	for i := range 1000 {
		e := logline.Event{Time: time.Date(2026, 11, 21, 16, 0, 0, i, time.UTC).UnixNano(), Level: logline.LevelInfo,
			Service: []byte("api"), Message: bytes.Repeat([]byte("x"), 200)}
		g.Data = logline.AppendLine(g.Data, &e)
		g.Events++
	}
	const rounds = 100 // ~23 MB offered, the queue holds 4 MiB
	start := time.Now()
	for range rounds {
		h.publish(&b)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("publishing to a reader that reads nothing took %v", d)
	}
	if dropped == 0 || r.dropped.Load() != int64(dropped) {
		t.Fatalf("dropped %d (reader counted %d), want > 0 and equal", dropped, r.dropped.Load())
	}
	if got := int64(len(r.queue)) * 1000; got+int64(dropped) != rounds*1000 {
		t.Fatalf("queued %d + dropped %d events, want %d", got, dropped, rounds*1000)
	}
	if r.queued.Load() > tailQueueBytes {
		t.Fatalf("queue holds %d bytes, over %d", r.queued.Load(), tailQueueBytes)
	}
	if len(other.queue) != 0 {
		t.Fatalf("a reader of another service got %d groups", len(other.queue))
	}

	// The reader catches up: every queued event, then the gap is reported.
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	queued := len(r.queue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var s Server
		s.streamTail(w, r, &tailFilter{})
	}()
	waitFor(t, func() bool { return len(r.queue) == 0 })
	h.remove(r)
	<-done
	w.Flush()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != queued*1000+1 || query.ControlKind([]byte(lines[1000])) != query.ControlDropped {
		t.Fatalf("got %d lines (line 1001: %.80q), want %d events and a dropped marker after the first group", len(lines), lines[min(1000, len(lines)-1)], queued*1000)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
