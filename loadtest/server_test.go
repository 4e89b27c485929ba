package loadtest

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// startServer serves h on a loopback port and returns its base URL.
func startServer(t testing.TB, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: h, MaxRequestBodySize: 64 << 20}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown() })
	return "http://" + ln.Addr().String()
}

func decode(t testing.TB, enc string, body []byte) []byte {
	t.Helper()
	switch enc {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case "zstd":
		zr, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		out, err := zr.DecodeAll(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return body
}

// sink is a fake ingest server: it stores every posted event's id by
// endpoint, service and user, and can answer the query API from them.
type sink struct {
	t        testing.TB
	mu       sync.Mutex
	ids      map[string]int // id -> times posted
	logs     map[string][]string
	logins   map[string][]string
	posts    int
	badTypes int
	// before, when set, may answer a POST itself (return true).
	before func(ctx *fasthttp.RequestCtx, post int) bool
}

func newSink(t testing.TB) *sink {
	return &sink{t: t, ids: map[string]int{}, logs: map[string][]string{}, logins: map[string][]string{}}
}

func (s *sink) handle(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.posts++
	post := s.posts
	s.mu.Unlock()
	if s.before != nil && s.before(ctx, post) {
		return
	}
	if string(ctx.Request.Header.ContentType()) != "application/x-ndjson" {
		s.mu.Lock()
		s.badTypes++
		s.mu.Unlock()
	}
	body := decode(s.t, string(ctx.Request.Header.Peek("Content-Encoding")), ctx.PostBody())
	path := string(ctx.Path())
	var p fastjson.Parser
	n := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
		v, err := p.ParseBytes(line)
		if err != nil {
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
			return
		}
		id := string(v.GetStringBytes("id"))
		s.ids[id]++
		switch {
		case path == "/v1/logins":
			u := string(v.GetStringBytes("user"))
			s.logins[u] = append(s.logins[u], id)
		case strings.HasPrefix(path, "/v1/logs"):
			svc := string(v.GetStringBytes("service"))
			s.logs[svc] = append(s.logs[svc], id)
		}
		n++
	}
	ctx.SetStatusCode(fasthttp.StatusAccepted)
	ctx.SetBodyString(`{"accepted":` + itoa(n) + `,"rejected":0,"errors":[]}`)
}

func (s *sink) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	m := s.logs
	if path == "/v1/logins" {
		m = s.logins
	}
	for _, ids := range m {
		n += len(ids)
	}
	return n
}
