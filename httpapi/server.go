package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"github.com/valyala/fasthttp/pprofhandler"

	"ingest/admission"
	"ingest/blobsink"
	"ingest/buffer"
	"ingest/internal/flagutil"
	"ingest/internal/httperr"
	"ingest/query"
	"ingest/tablesink"
)

// Config holds the HTTP settings.
type Config struct {
	Listen               string
	MaxBodyBytes         int64
	MaxDecompressedBytes int64
	MaxInflightBytes     int64
	TokensFile           string
	ReadTimeout          time.Duration
	Pprof                bool
}

// RegisterFlags adds the HTTP flags to fs.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", ":8080", "HTTP listen address")
	flagutil.BytesVar(fs, &c.MaxBodyBytes, "max-body-bytes", 16<<20, "largest request body accepted, as sent (413 past it)")
	flagutil.BytesVar(fs, &c.MaxDecompressedBytes, "max-decompressed-bytes", 64<<20, "largest request body accepted once decompressed (413 past it)")
	flagutil.BytesVar(fs, &c.MaxInflightBytes, "max-inflight-bytes", 64<<20, "memory for requests being read and parsed at once (body, decoded body, encoded lines); past it requests get 429")
	fs.StringVar(&c.TokensFile, "tokens", "", "file of accepted bearer tokens, one per line; when set, writes and queries need Authorization: Bearer <token>")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", 60*time.Second, "time allowed to read one request")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go profiles under /debug/pprof/ (behind --tokens when set)")
}

// Validate checks the settings.
func (c *Config) Validate() error {
	if c.MaxBodyBytes <= 0 || c.MaxDecompressedBytes <= 0 {
		return errors.New("cannot use a zero --max-body-bytes or --max-decompressed-bytes")
	}
	if c.MaxInflightBytes < c.MaxBodyBytes {
		return fmt.Errorf("cannot use --max-inflight-bytes %d below --max-body-bytes %d", c.MaxInflightBytes, c.MaxBodyBytes)
	}
	return nil
}

// Deps are what the server serves from.
type Deps struct {
	Buffer   *buffer.Buffer
	Blobs    blobsink.Store // for queries
	Logins   *tablesink.Sink
	Counters *tablesink.Counters
	Registry *prometheus.Registry
	Log      *slog.Logger
	Ready    func(ctx context.Context) error // storage reachable
	Query    query.Config                    // memory bounds of GET /v1/logs
}

// Server is the HTTP server.
type Server struct {
	cfg      Config
	deps     Deps
	tokens   [][]byte
	srv      *fasthttp.Server
	inflight *admission.Budget
	closing  atomic.Bool
	active   sync.WaitGroup
	met      *metrics
	metricsH fasthttp.RequestHandler
	ln       net.Listener
	tail     tailHub
}

// New builds the server; Serve starts it.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	s := &Server{cfg: cfg, deps: deps}
	s.inflight = admission.New(cfg.MaxInflightBytes, "request bytes in flight", "--max-inflight-bytes")
	if cfg.TokensFile != "" {
		toks, err := readTokens(cfg.TokensFile)
		if err != nil {
			return nil, err
		}
		s.tokens = toks
	}
	s.met = newMetrics(deps.Registry)
	s.tail.dropped = func(n int) { s.met.tailDropped.Add(float64(n)) }
	s.metricsH = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{}))
	s.srv = &fasthttp.Server{
		Handler:               s.handle,
		Name:                  "ingest",
		ReadTimeout:           cfg.ReadTimeout,
		IdleTimeout:           2 * time.Minute,
		MaxRequestBodySize:    int(cfg.MaxBodyBytes),
		StreamRequestBody:     true,
		ReadBufferSize:        16 << 10,
		NoDefaultServerHeader: false,
		NoDefaultContentType:  true,
		ReduceMemoryUsage:     false,
		Logger:                fasthttpLogger{deps.Log},
	}
	return s, nil
}

type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) { f.l.Debug(fmt.Sprintf(format, args...)) }

func readTokens(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --tokens file: %w", err)
	}
	defer f.Close()
	var toks [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if t != "" && !strings.HasPrefix(t, "#") {
			toks = append(toks, []byte(t))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read --tokens file: %w", err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("cannot use --tokens %s: it holds no token", path)
	}
	return toks, nil
}

// Listen binds the listen address (so callers learn the port before Serve).
func (s *Server) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	return ln.Addr(), nil
}

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	if s.ln == nil {
		if _, err := s.Listen(); err != nil {
			return err
		}
	}
	return s.srv.Serve(s.ln)
}

// Drain makes every new request answer 503 and waits for the requests in
// progress (their batches are then in the buffer).
func (s *Server) Drain(ctx context.Context) {
	s.closing.Store(true)
	s.tail.close()
	done := make(chan struct{})
	go func() { s.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Shutdown closes the listener and open connections.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.srv.ShutdownWithContext(ctx)
}

func (s *Server) authorized(ctx *fasthttp.RequestCtx) bool {
	if len(s.tokens) == 0 {
		return true
	}
	h := ctx.Request.Header.Peek("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !bytes.EqualFold(h[:len(prefix)], []byte(prefix)) {
		return false
	}
	tok := bytes.TrimSpace(h[len(prefix):])
	ok := 0
	for _, t := range s.tokens {
		ok |= subtle.ConstantTimeCompare(tok, t)
	}
	return ok == 1
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	path := ctx.Path()
	method := ctx.Method()
	start := time.Now()
	route := "other"
	defer func() {
		s.met.requests.WithLabelValues(route, statusClass(ctx.Response.StatusCode())).Inc()
		s.met.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}()
	switch {
	case string(path) == "/healthz":
		route = "healthz"
		ctx.SetContentType("text/plain")
		ctx.WriteString("ok\n")
		return
	case string(path) == "/readyz":
		route = "readyz"
		s.ready(ctx)
		return
	case string(path) == "/metrics":
		route = "metrics"
		s.metricsH(ctx)
		return
	case s.cfg.Pprof && bytes.HasPrefix(path, []byte("/debug/pprof")):
		route = "pprof"
		if !s.authorized(ctx) {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusUnauthorized, Msg: "missing or unknown bearer token"})
			return
		}
		pprofhandler.PprofHandler(ctx)
		return
	}
	isLogs := string(path) == "/v1/logs" || bytes.HasPrefix(path, []byte("/v1/logs/"))
	isLogins := string(path) == "/v1/logins" || bytes.HasPrefix(path, []byte("/v1/logins/"))
	isRead := string(path) == "/v1/tail" || string(path) == "/v1/services"
	if !isLogs && !isLogins && !isRead {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusNotFound, Msg: fmt.Sprintf("no route for %s %s", method, path)})
		return
	}
	if !s.authorized(ctx) {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="ingest"`)
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusUnauthorized, Msg: "missing or unknown bearer token"})
		return
	}
	switch {
	case isLogs && ctx.IsPost():
		route = "post_logs"
		s.ingest(ctx, false)
	case isLogins && ctx.IsPost() && string(path) == "/v1/logins":
		route = "post_logins"
		s.ingest(ctx, true)
	case isLogs && ctx.IsGet() && string(path) == "/v1/logs":
		route = "get_logs"
		s.queryLogs(ctx)
	case isLogins && ctx.IsGet() && len(path) > len("/v1/logins/"):
		route = "get_logins"
		s.queryLogins(ctx)
	case ctx.IsGet() && string(path) == "/v1/tail":
		route = "get_tail"
		s.tailLogs(ctx)
	case ctx.IsGet() && string(path) == "/v1/services":
		route = "get_services"
		s.listServices(ctx)
	default:
		ctx.Response.Header.Set("Allow", "GET, POST")
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusMethodNotAllowed, Msg: fmt.Sprintf("%s is not allowed on %s", method, path)})
	}
}

func (s *Server) ready(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/plain")
	if s.closing.Load() {
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.WriteString("shutting down\n")
		return
	}
	if s.deps.Buffer.Full() {
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.WriteString("buffer full\n")
		return
	}
	if s.deps.Ready != nil {
		c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := s.deps.Ready(c); err != nil {
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.WriteString("storage unreachable: " + err.Error() + "\n")
			return
		}
	}
	ctx.WriteString("ready\n")
}

func statusClass(code int) string {
	switch {
	case code < 300:
		return "2xx"
	case code == 400:
		return "400"
	case code == 413:
		return "413"
	case code == 415:
		return "415"
	case code == 429:
		return "429"
	case code < 500:
		return "4xx"
	case code == 503:
		return "503"
	}
	return "5xx"
}
