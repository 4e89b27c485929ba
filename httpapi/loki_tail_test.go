package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"ingest/logline"
	"ingest/logql"
)

// wsClient is a WebSocket client of the Loki tail (gobwas/ws).
type wsClient struct {
	conn net.Conn
	r    io.Reader
}

func dialTail(t *testing.T, f *fixture, query string) *wsClient {
	t.Helper()
	d := ws.Dialer{Timeout: 10 * time.Second, NetDial: func(context.Context, string, string) (net.Conn, error) { return f.ln.Dial() }}
	conn, br, _, err := d.Dial(context.Background(), "ws://ingest/loki/api/v1/tail?"+query)
	if err != nil {
		t.Fatalf("dial the tail: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &wsClient{conn: conn, r: conn}
	if br != nil {
		c.r = io.MultiReader(br, conn)
	}
	return c
}

// next returns the next message of the server (control frames included),
// failing after 10 s.
func (c *wsClient) next(t *testing.T) wsutil.Message {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	msgs, err := wsutil.ReadServerMessage(c.r, nil)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("read the tail: %v", err)
	}
	return msgs[0]
}

// lines reads text messages until one has lines and returns them as
// "line@service/host/level".
func (c *wsClient) lines(t *testing.T) []string {
	t.Helper()
	for {
		m := c.next(t)
		if m.OpCode != ws.OpText {
			continue
		}
		var a struct{ Streams []json.RawMessage }
		if err := json.Unmarshal(m.Payload, &a); err != nil {
			t.Fatalf("message %s: %v", m.Payload, err)
		}
		if len(a.Streams) == 0 {
			continue
		}
		var s lokiStreams
		if err := json.Unmarshal([]byte(`{"data":{"result":`+string(mustJSON(t, a.Streams))+`}}`), &s); err != nil {
			t.Fatal(err)
		}
		return s.lines(t)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLokiTailWebSocket: the tail first sends the newest events of the
// range asked for, oldest first, then the matching events as they are
// accepted; it answers pings, and closes with 1001 when the server shuts
// down.
func TestLokiTailWebSocket(t *testing.T) {
	f := lokiFixture(t, Config{})
	c := dialTail(t, f, "query="+url.QueryEscape(`{service="lk"} != "skip"`)+"&start=1795276800000000000&limit=3")
	if got := strings.Join(c.lines(t), " | "); got != "m8 routine@lk/h2/error | m9 disk full@lk/h0/fatal | bare \"quoted\"\nline@lk//" {
		t.Fatalf("first message: %s", got)
	}
	waitFor(t, func() bool { return f.srv.tail.active() })
	post := func(body string) {
		if code, _, b := f.do(t, "POST", "/v1/logs", nil, []byte(body)); code != 202 {
			t.Fatalf("POST = %d %s", code, b)
		}
	}
	post(`{"service":"lk2","msg":"other service"}` + "\n" + `{"service":"lk","msg":"skip me"}` + "\n" +
		`{"service":"lk","host":"h9","level":"warn","msg":"live one"}` + "\n" + `{"service":"lk","msg":"live two"}`)
	if got := strings.Join(c.lines(t), " | "); got != "live one@lk/h9/warn | live two@lk//" {
		t.Fatalf("live message: %s", got)
	}
	if err := wsutil.WriteClientMessage(c.conn, ws.OpPing, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m := c.next(t); m.OpCode != ws.OpPong || string(m.Payload) != "hi" {
		t.Fatalf("ping answered with %v %q", m.OpCode, m.Payload)
	}
	f.srv.tail.close()
	if m := c.next(t); m.OpCode != ws.OpClose {
		t.Fatalf("at shutdown: %v %q, want a close frame", m.OpCode, m.Payload)
	} else if code, _ := ws.ParseCloseFrameData(m.Payload); code != ws.StatusGoingAway {
		t.Fatalf("closed with %d, want 1001", code)
	}
	waitFor(t, func() bool { return !f.srv.tail.active() })
}

// TestLokiTailClientGoesAway: a client that closes, or whose connection
// drops, gives its subscription back.
func TestLokiTailClientGoesAway(t *testing.T) {
	defer func(d time.Duration) { tailHeartbeat = d }(tailHeartbeat)
	tailHeartbeat = 50 * time.Millisecond
	f := lokiFixture(t, Config{})
	c := dialTail(t, f, "query="+url.QueryEscape(`{service="lk"}`))
	waitFor(t, func() bool { return f.srv.tail.active() })
	if err := wsutil.WriteClientMessage(c.conn, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "")); err != nil {
		t.Fatal(err)
	}
	for m := c.next(t); m.OpCode != ws.OpClose; m = c.next(t) {
	}
	waitFor(t, func() bool { return !f.srv.tail.active() })
	c = dialTail(t, f, "query="+url.QueryEscape(`{service="lk"}`))
	waitFor(t, func() bool { return f.srv.tail.active() })
	c.conn.Close()
	waitFor(t, func() bool { return !f.srv.tail.active() })
}

// TestLokiTailRefuses: what is not a WebSocket opening, or comes from a
// page of another origin, or asks for a metric, is refused before any
// subscription.
func TestLokiTailRefuses(t *testing.T) {
	f := lokiFixture(t, Config{})
	open := map[string]string{"Upgrade": "websocket", "Connection": "keep-alive, Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range open {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	sel := "/loki/api/v1/tail?query=" + url.QueryEscape(`{service="lk"}`)
	// Raw, with a deadline: a refusal answers and closes, a tail taken
	// by mistake would stay open.
	get := func(path string, hdr map[string]string) (int, string) {
		t.Helper()
		conn, err := f.ln.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		req, _ := http.NewRequest("GET", "http://ingest"+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		req.Write(conn)
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if resp.StatusCode == 101 {
			return 101, resp.Header.Get("Sec-WebSocket-Accept")
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		name, path string
		hdr        map[string]string
		code       int
		why        string
	}{
		{"plain GET", sel, nil, 400, "WebSocket endpoint"},
		{"no key", sel, with("Sec-WebSocket-Key", ""), 400, "Sec-WebSocket-Key"},
		{"version 8", sel, with("Sec-WebSocket-Version", "8"), 426, "version 13"},
		{"another origin", sel, with("Origin", "http://evil.example"), 403, "another origin"},
		{"a metric", "/loki/api/v1/tail?query=" + url.QueryEscape(`sum(count_over_time({service="lk"}[1m]))`), open, 400, "metric"},
		{"bad query", "/loki/api/v1/tail?query=" + url.QueryEscape(`{app="x"}`), open, 400, "supported: a selector"},
	} {
		code, body := get(c.path, c.hdr)
		if code != c.code || !strings.Contains(body, c.why) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, body, c.code, c.why)
		}
	}
	if f.srv.tail.active() {
		t.Fatal("a refused tail subscribed")
	}
	// The same origin is welcome (the server's own page).
	if code, accept := get(sel, with("Origin", "http://ingest")); code != 101 || accept != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("same origin: %d %q", code, accept)
	}
}

// fakeSub is a liveSub handing out given events, then reporting drops.
type fakeSub struct {
	events  []logline.Event
	dropped int64
	calls   int
}

func (s *fakeSub) next(_ time.Duration, fn func(*logline.Event)) (int64, bool) {
	if s.calls++; s.calls > 1 {
		return 0, false
	}
	for i := range s.events {
		fn(&s.events[i])
	}
	return s.dropped, true
}

func (s *fakeSub) close() {}

// TestLokiTailReportsDrops: events lost because the client fell behind are
// a dropped_entries message where the gap is; a large burst is split into
// messages of about lokiTailMessageBytes.
func TestLokiTailReportsDrops(t *testing.T) {
	srv, cli := net.Pipe()
	defer cli.Close()
	wc := newWSConn(srv)
	var evs []logline.Event
	for i := range 300 {
		evs = append(evs, logline.Event{Time: int64(i), Service: []byte("lk"), Level: logline.LevelInfo, Message: []byte(strings.Repeat("x", 500))})
	}
	lq, _ := logql.Parse(`{service="lk"}`)
	var s Server
	done := make(chan bool)
	go func() { done <- s.lokiTailLive(wc, &fakeSub{events: evs, dropped: 7}, lq) }()
	var values, messages int
	c := &wsClient{conn: cli, r: cli}
	for {
		m := c.next(t)
		var a struct {
			Streams []struct{ Values [][2]string }
			Dropped []struct {
				Labels    map[string]string
				Timestamp string
			} `json:"dropped_entries"`
		}
		if err := json.Unmarshal(m.Payload, &a); err != nil {
			t.Fatalf("%s: %v", m.Payload, err)
		}
		if len(a.Dropped) > 0 {
			if len(a.Dropped) != 1 || a.Dropped[0].Timestamp == "" || values != len(evs) {
				t.Fatalf("dropped %+v after %d values", a.Dropped, values)
			}
			break
		}
		messages++
		for _, st := range a.Streams {
			values += len(st.Values)
		}
		if len(m.Payload) > lokiTailMessageBytes+1024 {
			t.Fatalf("a message of %d bytes", len(m.Payload))
		}
	}
	if messages < 2 {
		t.Fatalf("%d values in %d messages: want the burst split", values, messages)
	}
	if open := <-done; open {
		t.Fatal("lokiTailLive did not see the subscription end")
	}
}
