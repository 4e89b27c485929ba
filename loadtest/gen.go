package loadtest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"ingest/logline"
)

// Bodies are generated once, before the run, as templates: whole NDJSON
// batches whose id digits and timestamps sit at known offsets. Sending a
// batch copies a template and overwrites those fixed-width fields, so the
// per-event cost is a memcpy and two short digit writes rather than JSON
// encoding, and the generator is not what limits the measured server.

const (
	seqWidth   = 12   // digits of the event counter in an id
	rfcLen     = 28   // len("2026-11-21T18:04:05.1234567Z")
	epochMsLen = 13   // Unix milliseconds until the year 2286
	tsStepNs   = 1000 // events of one batch are 1 µs apart, the last at send time
)

// Streams name the id spaces: the main traffic and the attack burst each
// count their own events, so their schedulers need no shared counter.
const (
	streamMain   = 'm'
	streamAttack = 'a'
)

type kind uint8

const (
	kindLogs kind = iota
	kindLogins
)

func (k kind) String() string {
	if k == kindLogins {
		return "logins"
	}
	return "logs"
}

type tsKind uint8

const (
	tsRFC3339 tsKind = iota // "ts":"2026-11-21T18:04:05.1234567Z"
	tsEpochMs               // "ts":1795284245123
)

// template is one pre-generated request body.
type template struct {
	kind  kind
	body  []byte
	ends  []int32  // ends[i]: offset just past event i's '\n'
	ids   []int32  // offset of event i's seqWidth counter digits
	ts    []int32  // offset of event i's timestamp value
	tsk   []tsKind // format of event i's timestamp
	users []int32  // logins: user rank of attempt i, -1 = the attack user
}

func (t *template) events() int { return len(t.ends) }

// corpus is everything generated before the run.
type corpus struct {
	runID      string // id prefix of this run, e.g. "lt5k2m9q"
	services   []string
	hosts      [][]string // hosts[i]: hosts running services[i]
	userWidth  int
	users      int
	attackUser string

	logs   []*template // main stream, kindLogs
	logins []*template // main stream, kindLogins
	attack []*template // attack stream, kindLogins
}

// userName returns the name of the user of a Zipf rank; rank -1 is the
// attack user.
func (c *corpus) userName(dst []byte, rank int32) []byte {
	if rank < 0 {
		return append(dst, c.attackUser...)
	}
	dst = append(dst, "user"...)
	return appendPadded(dst, uint64(rank), c.userWidth)
}

// appendID appends the id of event seq of a stream.
func (c *corpus) appendID(dst []byte, stream byte, seq int64) []byte {
	dst = append(dst, c.runID...)
	dst = append(dst, '-', stream)
	return appendPadded(dst, uint64(seq), seqWidth)
}

var serviceNames = []string{
	"api", "checkout", "auth", "search", "payments", "inventory", "cart", "users",
	"notifications", "gateway", "recommendations", "shipping", "orders", "billing",
	"catalog", "media", "reviews", "pricing", "fraud", "email",
}

// newCorpus draws service and host names and the id prefix.
func newCorpus(cfg *Config, r *rand.Rand) *corpus {
	c := &corpus{
		runID:      "lt" + randToken(r, 6),
		users:      cfg.Users,
		userWidth:  max(6, len(strconv.Itoa(cfg.Users-1))),
		attackUser: cfg.AttackUser,
	}
	for i := range cfg.Services {
		name := serviceNames[i%len(serviceNames)]
		if i >= len(serviceNames) {
			name += "-" + strconv.Itoa(i/len(serviceNames)+1)
		}
		c.services = append(c.services, name)
		c.hosts = append(c.hosts, nil)
	}
	// Hosts are pod names spread over the services, at least one each,
	// the way a Kubernetes deployment names them.
	for i := range max(cfg.Hosts, cfg.Services) {
		s := i % cfg.Services
		if i >= cfg.Hosts && len(c.hosts[s]) > 0 {
			continue
		}
		c.hosts[s] = append(c.hosts[s], c.services[s]+"-"+randToken(r, 9)+"-"+randToken(r, 5))
	}
	return c
}

const tokenAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

func randToken(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = tokenAlphabet[r.IntN(len(tokenAlphabet))]
	}
	return string(b)
}

// appendPadded appends v as exactly width decimal digits (the low ones).
func appendPadded(dst []byte, v uint64, width int) []byte {
	n := len(dst)
	for range width {
		dst = append(dst, '0')
	}
	putDigits(dst[n:], v)
	return dst
}

// putDigits writes v into b as len(b) zero-padded decimal digits.
func putDigits(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// Levels: mostly info, some debug and warn, few error and fatal.
var (
	levelNames   = []string{"debug", "info", "warn", "error", "fatal"}
	levelWeights = []float64{0.12, 0.74, 0.09, 0.045, 0.005}
)

// fieldStyle varies the field names by service, as different shippers and
// logging libraries name them.
type fieldStyle struct{ ts, level, msg string }

var fieldStyles = []fieldStyle{
	{"ts", "level", "message"},
	{"ts", "level", "message"},
	{"ts", "level", "msg"},             // Go slog, zap
	{"@timestamp", "level", "message"}, // Logstash, Elastic agents
	{"time", "severity", "msg"},        // Fluent Bit, GCP style
}

var (
	httpMethods = []string{"GET", "GET", "GET", "GET", "POST", "POST", "PUT", "DELETE"}
	pathsBySvc  = map[string][]string{
		"api":      {"/v2/items", "/v2/items/{id}", "/v2/me", "/v2/feed"},
		"checkout": {"/checkout", "/checkout/confirm", "/checkout/address"},
		"auth":     {"/oauth/token", "/login", "/logout", "/mfa/verify"},
		"search":   {"/search", "/search/suggest", "/search/facets"},
		"payments": {"/payments", "/payments/{id}/capture", "/refunds"},
		"cart":     {"/cart", "/cart/items", "/cart/items/{id}"},
	}
	defaultPaths = []string{"/", "/healthz", "/v1/{id}", "/v1/list", "/internal/sync"}
	userAgents   = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
		"ShopApp/4.12.0 (Android 15; Pixel 8)",
	}
	botAgents = []string{
		"python-requests/2.32.3", "curl/8.11.0", "Go-http-client/1.1",
		"Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1)", "okhttp/4.12.0",
	}
	words = []string{
		"request", "upstream", "cache", "shard", "region=eu-west-1", "retry", "pool", "conn",
		"tenant=acme", "queue", "batch", "flush", "latency", "budget", "span", "rpc", "grpc",
		"db=orders", "replica", "lease", "token", "session", "ttl=300", "version=4.12.0",
		"feature=new-checkout", "café", "naïve", "→", "✓", "k8s", "node", "zone=b",
	}
)

// genState carries the distributions used to draw templates.
type genState struct {
	c        *corpus
	r        *rand.Rand
	users    zipfRanks
	sizes    logNormal
	latency  logNormal
	services weighted
	levels   weighted
	msg      []byte // scratch
}

func newGenState(cfg *Config, c *corpus, r *rand.Rand) *genState {
	// Service popularity is mildly skewed: the front door logs most.
	sw := make([]float64, len(c.services))
	for i := range sw {
		sw[i] = 1 / math.Pow(float64(i+1), 0.8)
	}
	return &genState{
		c:        c,
		r:        r,
		users:    newZipfRanks(r, cfg.Zipf, cfg.Users),
		sizes:    newLogNormal(r, cfg.EventSize, 1),
		latency:  newLogNormal(r, 40, 1.1),
		services: newWeighted(sw),
		levels:   newWeighted(levelWeights),
	}
}

// placeholderTime is the timestamp written into templates before patching.
const placeholderTime = int64(1_767_225_600_000_000_000) // 2026-01-01T00:00:00Z

func (g *genState) appendTS(dst []byte, t *template, key string) []byte {
	dst = append(dst, '"')
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	if g.r.IntN(10) < 7 {
		dst = append(dst, '"')
		t.ts = append(t.ts, int32(len(dst)))
		t.tsk = append(t.tsk, tsRFC3339)
		dst = logline.AppendTime(dst, placeholderTime)
		return append(dst, '"')
	}
	t.ts = append(t.ts, int32(len(dst)))
	t.tsk = append(t.tsk, tsEpochMs)
	return strconv.AppendInt(dst, placeholderTime/1e6, 10)
}

func (g *genState) appendIDField(dst []byte, t *template, stream byte) []byte {
	dst = append(dst, `,"id":"`...)
	dst = append(dst, g.c.runID...)
	dst = append(dst, '-', stream)
	t.ids = append(t.ids, int32(len(dst)))
	dst = appendPadded(dst, 0, seqWidth)
	return append(dst, '"')
}

func appendStringField(dst []byte, key, val string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	return logline.AppendQuoted(dst, []byte(val))
}

// logsTemplate draws a batch of n log events.
func (g *genState) logsTemplate(stream byte, n int) *template {
	t := &template{kind: kindLogs}
	var b []byte
	var user []byte
	for range n {
		si := g.services.pick(g.r)
		svc := g.c.services[si]
		hosts := g.c.hosts[si]
		host := hosts[g.r.IntN(len(hosts))]
		lvl := g.levels.pick(g.r)
		st := fieldStyles[si%len(fieldStyles)]

		method := httpMethods[g.r.IntN(len(httpMethods))]
		paths := pathsBySvc[svc]
		if paths == nil {
			paths = defaultPaths
		}
		path := paths[g.r.IntN(len(paths))]
		status := 200
		switch {
		case lvl >= 3:
			status = []int{500, 502, 503, 504}[g.r.IntN(4)]
		case lvl == 2:
			status = []int{404, 409, 429, 400, 200}[g.r.IntN(5)]
		case method == "POST":
			status = 201
		}
		lat := float64(g.latency.next()) + float64(g.r.IntN(10))/10
		if lvl >= 2 {
			lat *= 8
		}
		user = g.c.userName(user[:0], int32(g.users.next()))

		b = append(b, '{')
		b = g.appendTS(b, t, st.ts)
		b = appendStringField(b, st.level, levelNames[lvl])
		b = appendStringField(b, "service", svc)
		b = appendStringField(b, "host", host)
		b = g.appendIDField(b, t, stream)
		b = append(b, ',', '"')
		b = append(b, st.msg...)
		b = append(b, `":`...)
		g.msg = g.message(g.msg[:0], lvl, svc, method, path, status, lat, user, g.sizes.next())
		b = logline.AppendQuoted(b, g.msg)
		b = append(b, `,"user":"`...)
		b = append(b, user...)
		b = append(b, `","latency_ms":`...)
		b = strconv.AppendFloat(b, lat, 'f', 1, 64)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = appendStringField(b, "method", method)
		b = appendStringField(b, "path", path)
		if g.r.IntN(3) == 0 {
			b = append(b, `,"trace_id":"`...)
			b = g.appendHex(b, 32)
			b = append(b, '"')
		}
		b = append(b, '}', '\n')
		t.ends = append(t.ends, int32(len(b)))
	}
	t.body = b
	return t
}

func (g *genState) appendHex(dst []byte, n int) []byte {
	const hex = "0123456789abcdef"
	for range n {
		dst = append(dst, hex[g.r.IntN(16)])
	}
	return dst
}

// message writes a plausible message of exactly size bytes (cut at a rune
// boundary, so at most 3 bytes short): a headline by level, then context
// words or, for errors, a stack trace, which is what makes the tail long.
func (g *genState) message(dst []byte, lvl int, svc, method, path string, status int, lat float64, user []byte, size int) []byte {
	start := len(dst)
	r := g.r
	switch lvl {
	case 0:
		switch r.IntN(3) {
		case 0:
			dst = fmt.Appendf(dst, "cache lookup key=%s:%d hit=%t", svc, r.IntN(1e6), r.IntN(4) > 0)
		case 1:
			dst = fmt.Appendf(dst, "sql: SELECT * FROM orders WHERE user_id = $1 LIMIT 50 took %.1fms", lat/4)
		default:
			dst = fmt.Appendf(dst, "span %x finished in %.2fms", r.Uint64(), lat/10)
		}
	case 1:
		switch r.IntN(4) {
		case 0, 1:
			dst = fmt.Appendf(dst, "%s %s %d %.1fms", method, path, status, lat)
		case 2:
			dst = fmt.Appendf(dst, "user %s signed in from %s", user, userAgents[r.IntN(len(userAgents))])
		default:
			dst = fmt.Appendf(dst, "order %d placed total=%d.%02d EUR items=%d", 1_000_000+r.IntN(9_000_000), r.IntN(500), r.IntN(100), 1+r.IntN(9))
		}
	case 2:
		switch r.IntN(3) {
		case 0:
			dst = fmt.Appendf(dst, "slow request %s %s took %.0fms (budget 250ms)", method, path, lat)
		case 1:
			dst = fmt.Appendf(dst, `disk "/var/lib/%s" %d%% full; compacting`, svc, 85+r.IntN(14))
		default:
			dst = fmt.Appendf(dst, "retrying upstream call to %s attempt=%d backoff=%dms", serviceNames[r.IntN(len(serviceNames))], 2+r.IntN(3), 100<<r.IntN(4))
		}
	default:
		switch r.IntN(3) {
		case 0:
			dst = fmt.Appendf(dst, "upstream %s returned %d after %.0fms", serviceNames[r.IntN(len(serviceNames))], status, lat)
		case 1:
			dst = fmt.Appendf(dst, "payment declined for user %s: card_expired", user)
		default:
			dst = append(dst, "panic: runtime error: invalid memory address or nil pointer dereference"...)
		}
	}
	for len(dst)-start < size {
		if lvl >= 3 {
			dst = fmt.Appendf(dst, "\n\tat com.shop.%s.%s.handle(%s.java:%d)", svc, []string{"Service", "Handler", "Repository", "Client"}[r.IntN(4)], svc, 20+r.IntN(900))
			continue
		}
		dst = append(dst, ' ')
		dst = append(dst, words[r.IntN(len(words))]...)
	}
	end := start + size
	for end > start && end < len(dst) && dst[end]&0xC0 == 0x80 {
		end-- // do not cut a multi-byte rune
	}
	return dst[:end]
}

// loginsTemplate draws a batch of n login attempts by Zipf-popular users,
// or, for the attack stream, a credential-stuffing burst against one user
// from many addresses, nearly all failing.
func (g *genState) loginsTemplate(stream byte, n int, attack bool) *template {
	t := &template{kind: kindLogins}
	var b []byte
	var user []byte
	for range n {
		rank := int32(-1)
		if !attack {
			rank = int32(g.users.next())
		}
		user = g.c.userName(user[:0], rank)
		b = append(b, '{')
		b = g.appendTS(b, t, "ts")
		b = append(b, `,"user":`...)
		b = logline.AppendQuoted(b, user)
		var ok bool
		var ua string
		if attack {
			ok = g.r.IntN(100) == 0
			ua = botAgents[g.r.IntN(len(botAgents))]
			b = fmt.Appendf(b, `,"success":%t,"ip":"%d.%d.%d.%d"`, ok, []int{45, 185, 91, 193}[g.r.IntN(4)], g.r.IntN(256), g.r.IntN(256), 1+g.r.IntN(254))
		} else {
			ok = g.r.IntN(100) < 92
			ua = userAgents[g.r.IntN(len(userAgents))]
			// A user mostly logs in from home: the address follows the rank.
			h := uint32(rank)*2654435761 + uint32(g.r.IntN(2))
			b = fmt.Appendf(b, `,"success":%t,"ip":"%d.%d.%d.%d"`, ok, []int{203, 198, 81, 88}[h%4], h>>8&255, h>>16&255, 1+(h>>24)%254)
		}
		b = appendStringField(b, "ua", ua)
		b = g.appendIDField(b, t, stream)
		b = appendStringField(b, "method", []string{"password", "password", "password", "sso", "otp"}[g.r.IntN(5)])
		b = append(b, '}', '\n')
		t.ends = append(t.ends, int32(len(b)))
		t.users = append(t.users, rank)
	}
	t.body = b
	return t
}

// Template pools are sized to a memory budget: enough distinct bodies that
// the traffic does not look periodic to the server's compressor, few enough
// to stay in a few tens of MiB.
const (
	logsPoolBytes   = 24 << 20
	loginsPoolBytes = 8 << 20
	minPool         = 4
	maxPool         = 64
)

func poolSize(budget, batch, eventBytes int) int {
	return max(minPool, min(maxPool, budget/max(1, batch*eventBytes)))
}

// attackBatch sizes attack requests so the burst arrives as at least ~20
// requests a second, not one large one.
func attackBatch(cfg *Config) int {
	return max(1, min(cfg.Batch, int(cfg.AttackRate/20)))
}

// generate builds the corpus and its template pools.
func generate(cfg *Config, r *rand.Rand) *corpus {
	c := newCorpus(cfg, r)
	g := newGenState(cfg, c, r)
	for range poolSize(logsPoolBytes, cfg.Batch, cfg.EventSize+260) {
		c.logs = append(c.logs, g.logsTemplate(streamMain, cfg.Batch))
	}
	if cfg.LoginsRatio > 0 {
		for range poolSize(loginsPoolBytes, cfg.Batch, 240) {
			c.logins = append(c.logins, g.loginsTemplate(streamMain, cfg.Batch, false))
		}
	}
	if cfg.AttackUser != "" {
		for range minPool {
			c.attack = append(c.attack, g.loginsTemplate(streamAttack, attackBatch(cfg), true))
		}
	}
	return c
}

// filler copies templates into a reusable buffer and patches ids and times.
type filler struct {
	buf   []byte
	sec   int64 // second formatted in cache
	ok    bool  // cache holds sec
	cache [rfcLen]byte
}

// fill returns the body of the first n events of t with event ids seq,
// seq+1, ... and times t0, t0+1µs, ... The result is valid until the next
// call.
func (f *filler) fill(t *template, n int, seq, t0 int64) []byte {
	b := append(f.buf[:0], t.body[:t.ends[n-1]]...)
	for i := range n {
		off := t.ids[i]
		putDigits(b[off:off+seqWidth], uint64(seq+int64(i)))
		ts := t0 + int64(i)*tsStepNs
		off = t.ts[i]
		if t.tsk[i] == tsEpochMs {
			putDigits(b[off:off+epochMsLen], uint64(ts/1e6))
			continue
		}
		// Within one second only the seven fractional digits change.
		if sec := ts / 1e9; sec != f.sec || !f.ok {
			logline.AppendTime(f.cache[:0], sec*1e9)
			f.sec, f.ok = sec, true
		}
		copy(b[off:off+rfcLen], f.cache[:])
		putDigits(b[off+20:off+27], uint64(ts%1e9/100))
	}
	f.buf = b
	return b
}

// compressor encodes bodies for --encoding. Each worker owns one, so the
// encoders and their output buffers are reused for every request without
// locking (a pool of one per worker).
type compressor struct {
	encoding string
	zw       *zstd.Encoder
	gw       *gzip.Writer
	out      bytes.Buffer
	zbuf     []byte
}

// compress returns raw encoded; the result is valid until the next call.
func (c *compressor) compress(raw []byte) []byte {
	switch c.encoding {
	case "zstd":
		if c.zw == nil {
			// Fastest level, one goroutine: the generator runs next to the
			// server on few cores and must not eat them.
			c.zw, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		}
		c.zbuf = c.zw.EncodeAll(raw, c.zbuf[:0])
		return c.zbuf
	case "gzip":
		c.out.Reset()
		if c.gw == nil {
			c.gw, _ = gzip.NewWriterLevel(&c.out, gzip.BestSpeed)
		} else {
			c.gw.Reset(&c.out)
		}
		c.gw.Write(raw) // writes to a bytes.Buffer cannot fail
		c.gw.Close()
		return c.out.Bytes()
	default:
		return raw
	}
}

func (c *compressor) close() {
	if c.zw != nil {
		c.zw.Close()
	}
}
