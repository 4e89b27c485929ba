package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"ingest/admission"
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
	var s Server
	h := &s.tail
	h.dropped, h.max, h.budget = func(n int) { dropped += n }, 10, admission.New(64<<20, "live tails", "--tail-budget-bytes")
	h.heartbeat, h.stall = tailHeartbeat, tailStall
	r, other := newTailReader(), newTailReader()
	r.services, other.services = map[string]bool{"api": true}, map[string]bool{"web": true}
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
	if r.held.Load() > tailQueueBytes {
		t.Fatalf("queue holds %d bytes, over %d", r.held.Load(), tailQueueBytes)
	}
	if used := h.budget.Used(); used != r.held.Load()+2*tailReaderBytes {
		t.Fatalf("budget charged %d bytes, want the queue's %d once plus two readers' %d", used, r.held.Load(), 2*tailReaderBytes)
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
		s.streamTail(w, r, &tailFilter{})
	}()
	waitFor(t, func() bool { return len(r.queue) == 0 })
	h.remove(r)
	<-done
	r.drain()
	h.remove(other)
	if used := h.budget.Used(); used != 0 {
		t.Fatalf("budget still charged %d bytes once every reader is gone", used)
	}
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

// tailConfig is the fixture's configuration with the given tail limits.
func tailConfig(readers int, budget int64) Config {
	return Config{MaxBodyBytes: 8 << 20, MaxDecompressedBytes: 8 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 10 * time.Second,
		MaxTailReaders: readers, TailBudgetBytes: budget}
}

// openTail opens GET /v1/tail?service=... and returns the response (the
// stream) or the refusal.
func openTail(t *testing.T, f *fixture, query string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://ingest/v1/tail?"+query, nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp, cancel
}

// TestTailReaderCap: past --max-tail-readers a tail gets 429 naming the
// flag, and a slot freed is taken again.
func TestTailReaderCap(t *testing.T) {
	defer func(d time.Duration) { tailHeartbeat = d }(tailHeartbeat)
	tailHeartbeat = 50 * time.Millisecond
	f := newFixture(t, tailConfig(2, 0), buffer.Config{})
	_, cancel := openTail(t, f, "service=a")
	openTail(t, f, "service=b")
	resp, _ := openTail(t, f, "service=c")
	if resp.StatusCode != 429 {
		t.Fatalf("third tail = %d, want 429", resp.StatusCode)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "--max-tail-readers") {
		t.Fatalf("third tail = %d %q (Retry-After %q), want 429 naming --max-tail-readers", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	cancel()
	waitFor(t, func() bool { return f.srv.tail.n.Load() == 1 })
	if resp, _ := openTail(t, f, "service=c"); resp.StatusCode != 200 {
		t.Fatalf("tail after one left = %d, want 200", resp.StatusCode)
	}
}

// TestTailBudgetBoundsEncoding: a line whose encoding the tail budget
// cannot hold is dropped for the reader, with a marker, while the lines
// around it come through; the budget is all given back at the end.
func TestTailBudgetBoundsEncoding(t *testing.T) {
	defer func(d time.Duration) { tailHeartbeat = d }(tailHeartbeat)
	tailHeartbeat = 50 * time.Millisecond
	f := newFixture(t, tailConfig(4, 1<<20), buffer.Config{})
	resp, cancel := openTail(t, f, "service=api")
	waitFor(t, func() bool { return f.srv.tail.active() })
	// 700 KB fits the budget as a group, but not with its encoding.
	big := `{"service":"api","id":"big","msg":"` + strings.Repeat("x", 700_000) + `"}`
	body := `{"service":"api","id":"before","msg":"a"}` + "\n" + big + "\n" + `{"service":"api","id":"after","msg":"b"}`
	if code, _, b := f.do(t, "POST", "/v1/logs", nil, []byte(body)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	var got []string
	for len(got) < 3 && sc.Scan() {
		var m struct {
			ID      string
			Dropped int
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s%d", m.ID, m.Dropped))
	}
	if strings.Join(got, " ") != "before0 after0 1" {
		t.Fatalf("tail gave %v, want before, after, then a marker of 1 dropped", got)
	}
	cancel()
	waitFor(t, func() bool { return !f.srv.tail.active() })
	waitFor(t, func() bool { return f.srv.tail.budget.Used() == 0 })
}

// TestTailStalledReaderIsDropped: a reader that never reads is cut off
// once its writes make no progress for tailStall, and gives its budget back.
func TestTailStalledReaderIsDropped(t *testing.T) {
	defer func(d time.Duration) { tailStall = d }(tailStall)
	tailStall = 300 * time.Millisecond
	f := newTCPFixture(t, tailConfig(4, 0), buffer.Config{})
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/tail?service=* HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	waitFor(t, func() bool { return f.srv.tail.active() })
	var b bytes.Buffer
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, `{"service":"api","id":"%d","msg":"%s"}`+"\n", i, strings.Repeat("y", 1000))
	}
	if code, _, body := f.do(t, "POST", "/v1/logs", nil, b.Bytes()); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	waitFor(t, func() bool { return !f.srv.tail.active() })
	waitFor(t, func() bool { return f.srv.tail.budget.Used() == 0 })
}

// TestTailHeadersAtOnce: a tail's headers are sent before any event or
// heartbeat, so a client (another instance's fan-out among them, which
// gives up on headers after 10 s) knows at once that the tail is on.
func TestTailHeadersAtOnce(t *testing.T) {
	f := newFixture(t, Config{}, buffer.Config{})
	defer f.srv.tail.close() // ends the stream, which has no heartbeat due for 10 s
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://ingest/v1/tail?service=api", nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("no headers within 5 s of opening a quiet tail (heartbeat every %v): %v", tailHeartbeat, err)
	}
	resp.Body.Close()
}
