package httpapi

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"ingest/admission"
	"ingest/intake/es"
	"ingest/intake/group"
	"ingest/intake/loki"
	"ingest/intake/syslog"
	"ingest/internal/flagutil"
	"ingest/query"
)

// Config holds the HTTP settings.
type Config struct {
	Listen               string
	MaxBodyBytes         int64
	MaxDecompressedBytes int64
	MaxInflightBytes     int64
	TokensFile           string
	MetricsAuth          bool
	TLSCert, TLSKey      string
	ReadTimeout          time.Duration
	WriteTimeout         time.Duration
	IdleTimeout          time.Duration
	MaxHeaderBytes       int64
	MaxConns             int
	MaxConnsPerIP        int
	Pprof                bool
	// AdvertiseURL is how other instances and clients reach this server
	// (http or https, no path): its peers' live tails use it, and its host
	// is also accepted in Host headers. Empty: the listen address, or this
	// host's address when listening on every interface.
	AdvertiseURL string
	// MaxConcurrentQueries bounds the reads that scan storage at once
	// (querygate.go); 0 means DefaultMaxConcurrentQueries.
	MaxConcurrentQueries int
	// TailBudgetBytes bounds the memory of every live tail at once: lines
	// waiting for readers, lines being encoded, streams from peers (0: the
	// default).
	TailBudgetBytes int64
	// MaxTailReaders bounds the open GET /v1/tail streams, peers' included
	// (429 past it; 0: the default).
	MaxTailReaders int
	Syslog         syslog.Config // the syslog listeners (syslog.go)
	ES             es.Config     // what /v1/es/ says it is
	Loki           loki.Config   // how Loki pushes name services
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{
		Listen:               ":8080",
		MaxBodyBytes:         16 << 20,
		MaxDecompressedBytes: 64 << 20,
		MaxInflightBytes:     64 << 20,
		ReadTimeout:          60 * time.Second,
		IdleTimeout:          2 * time.Minute,
		MaxHeaderBytes:       16 << 10,
		MaxConns:             10000,
		MaxConnsPerIP:        1000,
		MaxConcurrentQueries: DefaultMaxConcurrentQueries,
		TailBudgetBytes:      64 << 20,
		MaxTailReaders:       256,
		Syslog:               syslog.DefaultConfig(),
		ES:                   es.DefaultConfig(),
		Loki:                 loki.DefaultConfig(),
	}
}

// RegisterFlags adds the HTTP flags to fs, with c's values as their
// defaults (start from DefaultConfig).
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP listen address")
	flagutil.BytesVar(fs, &c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest request body accepted, as sent (413 past it)")
	flagutil.BytesVar(fs, &c.MaxDecompressedBytes, "max-decompressed-bytes", c.MaxDecompressedBytes, "largest request body accepted once decompressed (413 past it)")
	flagutil.BytesVar(fs, &c.MaxInflightBytes, "max-inflight-bytes", c.MaxInflightBytes, "memory for requests being read and parsed at once (body as it arrives, decoded body, encoded lines); past it requests get 429")
	fs.StringVar(&c.TokensFile, "tokens", c.TokensFile, "file of accepted bearer tokens, one per line, each optionally followed by the service name prefixes it may write; when set, every /v1/* and /loki/* route needs Authorization: Bearer <token>; re-read on SIGHUP")
	fs.BoolVar(&c.MetricsAuth, "metrics-auth", c.MetricsAuth, "with --tokens, /metrics needs a token too")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "PEM certificate (chain) file: serve HTTPS; re-read on SIGHUP")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "PEM private key file of --tls-cert; re-read on SIGHUP")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.ReadTimeout, "time allowed to read one request, headers and body")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "time allowed to write one response (0: no limit, so long queries and /v1/tail can stream)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "how long a keep-alive connection may wait for its next request")
	flagutil.BytesVar(fs, &c.MaxHeaderBytes, "max-header-bytes", c.MaxHeaderBytes, "largest request line plus headers (431 past it)")
	fs.IntVar(&c.MaxConns, "max-conns", c.MaxConns, "open connections at most; past it new ones get 503")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", c.MaxConnsPerIP, "open connections at most from one client IP, 0 for no limit; past it new ones get 429 (raise it behind a proxy or load balancer)")
	fs.BoolVar(&c.Pprof, "pprof", c.Pprof, "serve Go profiles under /debug/pprof/ (with --tokens to tokens without a service list, else to clients on this machine only)")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", c.AdvertiseURL, "the URL other instances and clients reach this server by; its host is also accepted in Host headers (default: the --listen address, or this host's first non-loopback address when listening on all interfaces)")
	fs.IntVar(&c.MaxConcurrentQueries, "max-concurrent-queries", c.MaxConcurrentQueries, "reads that scan storage at once (GET /v1/logs and its histograms, /v1/logins/{user}, /v1/services); past it a read waits up to 2 s, then gets 429")
	flagutil.BytesVar(fs, &c.TailBudgetBytes, "tail-budget-bytes", c.TailBudgetBytes, "memory for every live tail at once (lines waiting for readers, streams from other instances); a reader that falls behind loses events, with a marker")
	fs.IntVar(&c.MaxTailReaders, "max-tail-readers", c.MaxTailReaders, "open GET /v1/tail streams at most, those of other instances included (each client tail opens one on every instance); past it 429")
	c.ES.RegisterFlags(fs)
	c.Syslog.RegisterFlags(fs)
	c.Loki.RegisterFlags(fs)
}

// Validate checks the settings. It changes nothing.
func (c *Config) Validate() error {
	if c.MaxBodyBytes <= 0 || c.MaxDecompressedBytes <= 0 {
		return errors.New("cannot use a zero --max-body-bytes or --max-decompressed-bytes")
	}
	if c.MaxInflightBytes < c.MaxBodyBytes {
		return fmt.Errorf("cannot use --max-inflight-bytes %d below --max-body-bytes %d", c.MaxInflightBytes, c.MaxBodyBytes)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("cannot serve HTTPS with only one of --tls-cert and --tls-key: give both")
	}
	if c.MaxConns < 0 || c.MaxConnsPerIP < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 {
		return errors.New("cannot use a negative --max-conns, --max-conns-per-ip or timeout")
	}
	if c.TailBudgetBytes != 0 && c.TailBudgetBytes < 1<<20 || c.MaxTailReaders < 0 {
		return fmt.Errorf("cannot use --tail-budget-bytes %d or --max-tail-readers %d: want at least 1MiB and 1", c.TailBudgetBytes, c.MaxTailReaders)
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("cannot use --advertise-url %q: want http://HOST:PORT or https://HOST:PORT", c.AdvertiseURL)
		}
	}
	if c.MaxHeaderBytes != 0 && c.MaxHeaderBytes < 1<<10 {
		return fmt.Errorf("cannot use --max-header-bytes %d: want at least 1KiB", c.MaxHeaderBytes)
	}
	if c.AdvertiseURL != "" {
		if _, err := advertisedHost(c.AdvertiseURL); err != nil {
			return err
		}
	}
	if c.MaxConcurrentQueries < 0 {
		return fmt.Errorf("cannot use --max-concurrent-queries %d: want at least 1", c.MaxConcurrentQueries)
	}
	if err := c.ES.Validate(); err != nil {
		return err
	}
	if err := c.Syslog.Validate(); err != nil {
		return err
	}
	if c.Syslog.TLS && c.TLSCert == "" {
		return fmt.Errorf("cannot use --syslog-tls without --tls-cert and --tls-key")
	}
	return c.Loki.Validate()
}

// TLS reports whether the server serves HTTPS.
func (c *Config) TLS() bool { return c.TLSCert != "" }

// Deps are what the server serves from.
type Deps struct {
	Buffer Buffer
	Blobs  query.Store // for queries
	Logins Logins
	// Stats answers GET /v1/stats; nil: the route answers 404.
	Stats    Stats
	Registry *prometheus.Registry
	Log      *slog.Logger
	Ready    func(ctx context.Context) error // storage reachable
	Query    query.Config                    // memory bounds of GET /v1/logs
	// LocalToken is one more token without a service list, accepted when
	// --tokens is set: the one the server records in its data directory
	// for the command line beside it.
	LocalToken string
	// Groups groups every request's rows into its batch, under the
	// per-request and per-hour limits; nil: group.DefaultConfig() over
	// Logins.
	Groups *group.Pool
	// Cluster lists the instances sharing the storage; nil: this one alone
	// (GET /v1/cluster lists it, tails follow no peer).
	Cluster Cluster
}

// Server is the HTTP server.
type Server struct {
	cfg      Config
	deps     Deps
	tokens   atomic.Pointer[tokenSet] // nil: no tokens, every route is open
	certs    *certReloader            // nil: plain HTTP
	hosts    *hostGuard               // the names Host may give without tokens
	srv      *fasthttp.Server
	inflight *admission.Budget
	groups   *group.Pool
	closing  atomic.Bool
	active   sync.WaitGroup
	met      *metrics
	metricsH fasthttp.RequestHandler
	routes   routes
	// lokiServiceLabels is cfg.Loki.Labels(), the service labels of Loki
	// pushes.
	lokiServiceLabels []string
	syslog            *syslogListeners // nil without --syslog-tcp and --syslog-udp
	ln                net.Listener
	tail              tailHub
	// peerClient follows the other instances' tails.
	peerClient *http.Client
	// lingering counts connections reading and dropping the rest of a
	// refused body (linger.go).
	lingering atomic.Int32
	queries   *queryGate // reads that scan storage (querygate.go)
	panics    *panicLog  // recovered panics (panics.go)
}

// New builds the server; Serve starts it.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	s := &Server{cfg: cfg, deps: deps, hosts: newHostGuard(&cfg), lokiServiceLabels: cfg.Loki.Labels()}
	s.inflight = admission.New(cfg.MaxInflightBytes, "request bytes in flight", "--max-inflight-bytes")
	if s.groups = deps.Groups; s.groups == nil {
		var err error
		if s.groups, err = group.NewPool(group.DefaultConfig(), deps.Logins); err != nil {
			return nil, err
		}
	}
	if cfg.TokensFile != "" {
		ts, err := readTokensFile(cfg.TokensFile, deps.LocalToken)
		if err != nil {
			return nil, err
		}
		s.tokens.Store(ts)
	}
	if cfg.TLS() {
		r, err := newCertReloader(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, err
		}
		s.certs = r
	}
	s.met = newMetrics(deps.Registry)
	s.queries = newQueryGate(cmp.Or(cfg.MaxConcurrentQueries, DefaultMaxConcurrentQueries))
	s.panics = newPanicLog(deps.Log, s.met.panics)
	s.tail.dropped = func(n int) { s.met.tailDropped.Add(float64(n)) }
	s.tail.heartbeat, s.tail.stall, s.tail.peerPoll = tailHeartbeat, tailStall, tailPeerPoll
	s.tail.max = cmp.Or(cfg.MaxTailReaders, DefaultConfig().MaxTailReaders)
	s.tail.budget = admission.New(cmp.Or(cfg.TailBudgetBytes, DefaultConfig().TailBudgetBytes), "live tails", "--tail-budget-bytes")
	s.peerClient = newPeerClient(cfg)
	s.metricsH = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{}))
	s.routes = s.newRoutes()
	s.srv = &fasthttp.Server{
		Handler:               s.handle,
		Name:                  "ingest",
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		Concurrency:           cfg.MaxConns,
		MaxRequestBodySize:    int(cfg.MaxBodyBytes),
		StreamRequestBody:     true,
		ReadBufferSize:        int(cfg.MaxHeaderBytes), // also the largest header fasthttp reads
		TCPKeepalive:          true,                    // dead peers of long streams (tail) go away
		NoDefaultServerHeader: false,
		NoDefaultContentType:  true,
		// No form is ever read: without this fasthttp parses a multipart
		// body before the handler, in memory (or temporary files) the
		// budgets do not count, and the intake's 415 never runs.
		DisablePreParseMultipartForm: true,
		ReduceMemoryUsage:            false,
		Logger:                       fasthttpLogger{deps.Log},
	}
	return s, nil
}

// Reload re-reads the tokens file and the TLS certificate and key (on
// SIGHUP). What fails to load leaves the previous tokens or certificate in
// place; open connections are not touched.
func (s *Server) Reload() error {
	var errs []error
	if s.cfg.TokensFile != "" {
		if ts, err := readTokensFile(s.cfg.TokensFile, s.deps.LocalToken); err != nil {
			errs = append(errs, fmt.Errorf("%w (the previous tokens stay)", err))
		} else {
			s.tokens.Store(ts)
		}
	}
	if s.certs != nil {
		if err := s.certs.reload(); err != nil {
			errs = append(errs, fmt.Errorf("%w (the previous certificate stays)", err))
		}
	}
	err := errors.Join(errs...)
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.met.reloads.WithLabelValues(result).Inc()
	return err
}

type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) { f.l.Debug(fmt.Sprintf(format, args...)) }

// Listen binds the listen address (so callers learn the port before Serve).
func (s *Server) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	if s.cfg.MaxConnsPerIP > 0 {
		// Ours, not fasthttp's MaxConnsPerIP (see perIPListener), and
		// beneath TLS so a refused connection costs no handshake.
		refuse := refuseHTTP
		if s.certs != nil {
			refuse = refuseClose
		}
		s.ln = newPerIPListener(s.ln, s.cfg.MaxConnsPerIP, refuse, s.met.connsRefusedPerIP.Inc)
	}
	if s.certs != nil {
		s.ln = tls.NewListener(s.ln, s.certs.config())
	}
	if err := s.listenSyslog(); err != nil {
		s.ln.Close()
		return nil, err
	}
	s.warnIfOpen(ln.Addr())
	return ln.Addr(), nil
}

// Serve serves until Shutdown.
func (s *Server) Serve() error {
	if s.ln == nil {
		if _, err := s.Listen(); err != nil {
			return err
		}
	}
	s.serveSyslog()
	return s.srv.Serve(s.ln)
}

// Drain makes every new request answer 503 and waits for the requests in
// progress (their batches are then in the buffer).
func (s *Server) Drain(ctx context.Context) {
	s.closing.Store(true)
	s.closeSyslog(ctx)
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

// handle serves a request by the route table and counts it under its
// route. A panic in it answers 500 and is logged and counted (panics.go).
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	route := "panic"
	defer func() {
		if p := recover(); p != nil {
			s.recovered(ctx, p)
		}
		s.met.requests.WithLabelValues(route, statusClass(ctx.Response.StatusCode())).Inc()
		s.met.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}()
	route = s.dispatch(ctx)
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
	if err := s.deps.Buffer.WALErr(); err != nil {
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.WriteString("write-ahead log cannot take writes: " + err.Error() + "\n")
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
