package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

const (
	requestTimeout = 60 * time.Second
	// maxBatchAge bounds how long a batch is retried on 429/503: past it
	// the batch counts as failed with the last status.
	maxBatchAge = 2 * time.Minute
	// attackWorkers send the attack stream; it is a few tens of requests
	// a second.
	attackWorkers = 4
)

// batch states, as far as verification is concerned.
const (
	stAccepted uint8 = iota // 2xx, every event accepted
	stPartial               // 2xx, the listed lines rejected
	stNone                  // refused: no event accepted
	stUnknown               // no usable answer: the server may have kept any of it
)

// sentBatch records one batch for the partition report and verification.
type sentBatch struct {
	stream   byte
	kind     kind
	state    uint8
	target   uint8 // the target that answered last (see post)
	tmpl     int32
	n        int32
	seq      int64   // id counter of the first event
	t0       int64   // Unix ns of the first event
	rejected []int32 // stPartial: 1-based rejected lines
}

// stream is one open- or closed-loop sequence of batches sharing an id
// space. Ticket k is the k-th batch: its ids start at k*batch and, in open
// loop, it is due at start + k*interval whatever happened to earlier ones.
type stream struct {
	id          byte
	batch       int
	intervalNs  float64 // 0 = closed loop
	maxTickets  int64   // -1 = until the deadline
	lastN       int     // events in the last ticket when maxTickets >= 0
	loginsRatio float64
	attack      bool
	next        atomic.Int64
}

// ticketKind spreads login batches evenly: ticket k is a login batch when
// floor((k+1)*ratio) > floor(k*ratio).
func (s *stream) ticketKind(k int64) kind {
	if s.attack {
		return kindLogins
	}
	r := s.loginsRatio
	if math.Floor(float64(k+1)*r) > math.Floor(float64(k)*r) {
		return kindLogins
	}
	return kindLogs
}

type runner struct {
	cfg      *Config
	c        *corpus
	targets  []runTarget
	st       *stats
	start    time.Time
	deadline time.Time // zero when the run is bounded by --events
	mainDone atomic.Bool

	recMu      sync.Mutex
	recs       []sentBatch
	loginsSent atomic.Int64
	attackSent atomic.Int64
}

// Run sends the configured load, waits for every answer and returns the
// report. It writes a live progress line to progress when that is a
// terminal (and cfg.Quiet is false), and the --report and --html files
// when set. Cancelling ctx stops sending and returns the report so far.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tgts, _ := parseTargets(cfg.Target)
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if cfg.Encoding == "" {
		cfg.Encoding = "identity"
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x9e3779b97f4a7c15))
	r := newRunner(&cfg, generate(&cfg, rng), tgts)
	defer func() {
		for _, t := range r.targets {
			t.hc.CloseIdleConnections()
		}
	}()

	main, attack := r.streams()
	end := r.send(ctx, progress, main, attack)

	rep := r.report(end)
	rep.targetOf = r.targetIndex()
	rep.Interrupted = ctx.Err() != nil
	rep.Partitions = r.partitions(rep.Seconds)
	if cfg.Verify {
		r.verifyInto(ctx, rep, end)
	}
	return rep, writeReports(&cfg, rep)
}

// runTarget is one server the batches go to.
type runTarget struct {
	hc                 *fasthttp.HostClient
	logsURI, loginsURI string
}

func newRunner(cfg *Config, c *corpus, tgts []target) *runner {
	r := &runner{cfg: cfg, c: c, st: newStats()}
	for _, tgt := range tgts {
		r.targets = append(r.targets, runTarget{
			hc: &fasthttp.HostClient{
				Addr:                          tgt.addr,
				IsTLS:                         tgt.tls,
				Name:                          "ingest-loadtest",
				MaxConns:                      cfg.Concurrency + attackWorkers,
				MaxConnWaitTimeout:            5 * time.Second, // a closing connection may briefly hold a slot
				MaxIdleConnDuration:           30 * time.Second,
				ReadTimeout:                   requestTimeout,
				WriteTimeout:                  requestTimeout,
				DisableHeaderNamesNormalizing: true,
				DisablePathNormalizing:        true,
			},
			logsURI:   tgt.base + "/v1/logs",
			loginsURI: tgt.base + "/v1/logins",
		})
	}
	return r
}

// streams returns the main stream and, when the corpus has attack
// templates, the attack stream (nil otherwise).
func (r *runner) streams() (main, attack *stream) {
	cfg := r.cfg
	main = &stream{id: streamMain, batch: cfg.Batch, maxTickets: -1, loginsRatio: cfg.LoginsRatio}
	if len(r.c.logins) == 0 {
		main.loginsRatio = 0
	}
	if cfg.Rate > 0 {
		main.intervalNs = float64(cfg.Batch) / cfg.Rate * 1e9
	}
	if cfg.Events > 0 {
		main.maxTickets = (cfg.Events + int64(cfg.Batch) - 1) / int64(cfg.Batch)
		main.lastN = int(cfg.Events - (main.maxTickets-1)*int64(cfg.Batch))
	}
	if len(r.c.attack) > 0 {
		ab := attackBatch(cfg)
		attack = &stream{id: streamAttack, batch: ab, maxTickets: -1, attack: true, intervalNs: float64(ab) / cfg.AttackRate * 1e9}
	}
	return main, attack
}

// send runs the workers of both streams and the progress ticker until the
// main stream ends (the attack stream stops with it) and returns the end
// time.
func (r *runner) send(ctx context.Context, progress io.Writer, main, attack *stream) time.Time {
	r.start = time.Now()
	if r.cfg.Events == 0 {
		r.deadline = r.start.Add(r.cfg.Duration)
	}
	tickDone := make(chan struct{})
	tickStopped := make(chan struct{})
	go r.ticker(progress, tickDone, tickStopped)

	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Go(func() { r.worker(ctx, main) })
	}
	var awg sync.WaitGroup
	if attack != nil {
		for range attackWorkers {
			awg.Go(func() { r.worker(ctx, attack) })
		}
	}
	wg.Wait()
	r.mainDone.Store(true)
	awg.Wait()
	end := time.Now()
	close(tickDone)
	<-tickStopped
	return end
}

// verifyInto reads the run's events back and records the result in rep;
// an interrupted run is not verified.
func (r *runner) verifyInto(ctx context.Context, rep *Report, end time.Time) {
	if ctx.Err() != nil {
		rep.VerifyErr = "skipped: the run was interrupted"
		return
	}
	if r.cfg.BeforeVerify != nil {
		r.cfg.BeforeVerify()
	}
	v, err := r.verify(ctx, end)
	rep.Verify = v
	if err != nil {
		rep.VerifyErr = err.Error()
	}
}

// writeReports writes the --report and --html files when set.
func writeReports(cfg *Config, rep *Report) error {
	if cfg.Report != "" {
		if err := writeFile(cfg.Report, rep.WriteJSON); err != nil {
			return err
		}
	}
	if cfg.HTML != "" {
		if err := writeFile(cfg.HTML, rep.WriteHTML); err != nil {
			return err
		}
	}
	return nil
}

// worker sends tickets of s until the stream ends.
type worker struct {
	req    *fasthttp.Request
	resp   *fasthttp.Response
	fill   filler
	comp   compressor
	timer  *time.Timer
	parser fastjson.Parser
	lines  []int32
}

func (r *runner) newWorker() *worker {
	w := &worker{
		req:   fasthttp.AcquireRequest(),
		resp:  fasthttp.AcquireResponse(),
		comp:  compressor{encoding: r.cfg.Encoding},
		timer: time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	w.req.Header.SetMethod(fasthttp.MethodPost)
	w.req.Header.SetContentType("application/x-ndjson")
	if r.cfg.Encoding != "identity" {
		w.req.Header.Set("Content-Encoding", r.cfg.Encoding)
	}
	if r.cfg.Token != "" {
		w.req.Header.Set("Authorization", "Bearer "+r.cfg.Token)
	}
	return w
}

func (w *worker) release() {
	fasthttp.ReleaseRequest(w.req)
	fasthttp.ReleaseResponse(w.resp)
	w.comp.close()
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func (w *worker) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
		return true
	case <-ctx.Done():
		w.timer.Stop()
		return false
	}
}

func (r *runner) worker(ctx context.Context, s *stream) {
	w := r.newWorker()
	defer w.release()
	for ctx.Err() == nil {
		if s.attack && r.mainDone.Load() {
			return
		}
		k := s.next.Add(1) - 1
		if s.maxTickets >= 0 && k >= s.maxTickets {
			return
		}
		var intended time.Time
		if s.intervalNs > 0 {
			intended = r.start.Add(time.Duration(float64(k) * s.intervalNs))
			if !r.deadline.IsZero() && !intended.Before(r.deadline) {
				return
			}
			if !w.sleep(ctx, time.Until(intended)) {
				return
			}
		} else {
			intended = time.Now()
			if !r.deadline.IsZero() && !intended.Before(r.deadline) {
				return
			}
		}
		r.sendTicket(ctx, w, s, k, intended)
	}
}

func (r *runner) sendTicket(ctx context.Context, w *worker, s *stream, k int64, intended time.Time) {
	kd := s.ticketKind(k)
	n := s.batch
	if s.maxTickets >= 0 && k == s.maxTickets-1 {
		n = s.lastN
	}
	var pool []*template
	logins := s.attack || kd == kindLogins
	switch {
	case s.attack:
		pool = r.c.attack
	case kd == kindLogins:
		pool = r.c.logins
	default:
		pool = r.c.logs
	}
	ti := int(k % int64(len(pool)))
	t := pool[ti]
	seq := k * int64(s.batch)
	t0 := time.Now().UnixNano() - int64(n-1)*tsStepNs
	raw := w.fill.fill(t, n, seq, t0)
	body := w.comp.compress(raw)

	o := outcome{events: n, rawBytes: len(raw)}
	w.req.SetBodyRaw(body)
	if s.intervalNs > 0 && !s.attack {
		r.st.sendLag(time.Since(intended))
	}
	tgt := int(k % int64(len(r.targets))) // round-robin
	st := r.post(ctx, w, &tgt, logins, intended, &o)
	o.latency = time.Since(intended)
	r.st.record(&o)
	if kd == kindLogins {
		if s.attack {
			r.attackSent.Add(int64(n))
		}
		r.loginsSent.Add(int64(n))
	}
	if kd == kindLogins || r.cfg.Verify {
		b := sentBatch{stream: s.id, kind: kd, state: st, target: uint8(tgt), tmpl: int32(ti), n: int32(n), seq: seq, t0: t0}
		if st == stPartial {
			b.rejected = append([]int32(nil), w.lines...)
		}
		r.recMu.Lock()
		r.recs = append(r.recs, b)
		r.recMu.Unlock()
	}
}

// post sends the prepared request to target *tgt (logs or login
// attempts), honouring Retry-After on 429 and 503 by resending the same
// body, and fills o. As a load balancer would, it sends a batch answered
// 503 (an instance shutting down, or whose storage fails) to the next
// target, and one whose connection is refused (nothing was sent) to the
// next at once, each target once. It returns the batch state and leaves in
// *tgt the target that answered last.
func (r *runner) post(ctx context.Context, w *worker, tgt *int, logins bool, intended time.Time, o *outcome) uint8 {
	body := w.req.Body()
	refused := 0
	for {
		t := &r.targets[*tgt]
		if logins {
			w.req.SetRequestURI(t.loginsURI)
		} else {
			w.req.SetRequestURI(t.logsURI)
		}
		o.wireBytes += len(body)
		err := t.hc.DoTimeout(w.req, w.resp, requestTimeout)
		if err != nil && errors.Is(err, syscall.ECONNREFUSED) && refused+1 < len(r.targets) {
			refused++
			*tgt = (*tgt + 1) % len(r.targets)
			continue
		}
		if err != nil {
			o.errText = errClass(err)
			return stUnknown
		}
		code := w.resp.StatusCode()
		o.status = code
		if code == fasthttp.StatusServiceUnavailable {
			*tgt = (*tgt + 1) % len(r.targets)
		}
		if code == fasthttp.StatusTooManyRequests || code == fasthttp.StatusServiceUnavailable {
			wait := retryAfter(w.resp.Header.Peek("Retry-After"), o.retries)
			if ctx.Err() == nil && time.Since(intended)+wait < maxBatchAge {
				o.retries++
				if code == fasthttp.StatusTooManyRequests {
					o.retry429++
				} else {
					o.retry503++
				}
				if w.sleep(ctx, wait) {
					continue
				}
			}
			return stNone
		}
		switch {
		case code >= 200 && code < 300:
			return r.accepted(w, o)
		case code >= 400 && code < 500:
			o.rejected = o.events
			return stNone
		default:
			return stNone
		}
	}
}

// accepted reads a 202 answer {"accepted":N,"rejected":M,"errors":[{"line":L,...}]}.
// An answer without counts means every event was taken.
func (r *runner) accepted(w *worker, o *outcome) uint8 {
	o.accepted = o.events
	v, err := w.parser.ParseBytes(w.resp.Body())
	if err != nil || !v.Exists("accepted") {
		return stAccepted
	}
	a := min(max(v.GetInt("accepted"), 0), o.events)
	o.accepted = a
	o.rejected = o.events - a
	if a == o.events {
		return stAccepted
	}
	w.lines = w.lines[:0]
	for _, e := range v.GetArray("errors") {
		if l := e.GetInt("line"); l > 0 {
			w.lines = append(w.lines, int32(l))
		}
	}
	if len(w.lines) == o.rejected {
		return stPartial
	}
	return stUnknown
}

// retryAfter returns how long to wait before resending: the Retry-After
// header in seconds or as an HTTP date, else a backoff from 100 ms, at
// most 30 s either way.
func retryAfter(h []byte, attempt int) time.Duration {
	const maxWait = 30 * time.Second
	if len(h) > 0 {
		if s, err := strconv.ParseFloat(string(h), 64); err == nil && s >= 0 {
			if s >= maxWait.Seconds() { // also +Inf; the product would overflow
				return maxWait
			}
			return time.Duration(s * float64(time.Second))
		}
		if t, err := time.Parse(time.RFC1123, string(h)); err == nil {
			return max(0, min(time.Until(t), maxWait))
		}
	}
	return min(100*time.Millisecond<<min(attempt, 8), maxWait)
}

// errClass names a transport error briefly, for the errors-by-status table.
func errClass(err error) string {
	var to interface{ Timeout() bool }
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.As(err, &to) && to.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, fasthttp.ErrConnectionClosed):
		return "connection reset"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no free connections"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// ticker closes a one-second bucket every second and redraws the progress
// line.
func (r *runner) ticker(progress io.Writer, done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	live := !r.cfg.Quiet && isTerminal(progress)
	next := r.start.Add(time.Second)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	sec := 0
	for {
		select {
		case <-t.C:
			s := r.st.rotate(float64(sec), time.Second)
			sec++
			if live {
				tot, p99 := r.st.snapshot()
				fmt.Fprintf(progress, "\r%5ds  %12s events/s  %14s accepted  errors %s  p99 %s   ",
					sec, human(int64(s.EventsPerSec)), human(tot.accepted), human(tot.errors), ms(p99))
			}
			next = next.Add(time.Second)
			t.Reset(time.Until(next))
		case <-done:
			if part := time.Since(next.Add(-time.Second)); part > 10*time.Millisecond {
				r.st.rotate(float64(sec), part)
			}
			if live {
				fmt.Fprintln(progress)
			}
			return
		}
	}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (r *runner) report(end time.Time) *Report {
	cfg := r.cfg
	st := r.st
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.totals
	secs := end.Sub(r.start).Seconds()
	mode := "closed loop"
	if cfg.Rate > 0 {
		mode = "open loop at " + human(int64(cfg.Rate)) + " events/s"
	}
	rep := &Report{
		RunID: r.c.runID, Target: cfg.Target, Mode: mode, Rate: cfg.Rate,
		Concurrency: cfg.Concurrency, Batch: cfg.Batch, Encoding: cfg.Encoding, EventSize: cfg.EventSize, Seed: cfg.Seed,
		Start: r.start, End: end, Seconds: secs,
		Requests: t.requests, EventsSent: t.events, EventsAccepted: t.accepted, EventsRejected: t.rejected, EventsFailed: t.failed,
		LoginsSent: r.loginsSent.Load(), AttackSent: r.attackSent.Load(),
		BytesRaw: t.raw, BytesWire: t.wire,
		Latency:   latencySummary(st.all),
		SendLag:   latencySummary(st.lag),
		Histogram: logBuckets(st.all),
		Status:    maps(st.status),
		Errors:    t.errors,
		Retry429:  t.retry429, Retry503: t.retry503,
		Series: append([]SecondStats(nil), st.series...),
	}
	if secs > 0 {
		rep.EventsPerSec = float64(t.accepted) / secs
		rep.MBPerSecRaw = float64(t.raw) / secs / 1e6
		rep.MBPerSecWire = float64(t.wire) / secs / 1e6
	}
	return rep
}

func maps(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// eachAttempt feeds every login attempt sent, in time order.
func (r *runner) eachAttempt(fn func(*attempt)) {
	recs := make([]*sentBatch, 0, len(r.recs))
	for i := range r.recs {
		if r.recs[i].kind == kindLogins {
			recs = append(recs, &r.recs[i])
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].t0 < recs[j].t0 })
	var at attempt
	for _, b := range recs {
		t := r.templateOf(b)
		at.replica = r.replicaOf(b)
		for i := range int64(b.n) {
			at.user = r.c.userName(at.user[:0], t.users[i])
			at.id = r.c.appendID(at.id[:0], b.stream, b.seq+i)
			at.unixNano = b.t0 + i*tsStepNs
			fn(&at)
		}
	}
}

func (r *runner) templateOf(b *sentBatch) *template {
	switch {
	case b.stream == streamAttack:
		return r.c.attack[b.tmpl]
	case b.kind == kindLogins:
		return r.c.logins[b.tmpl]
	default:
		return r.c.logs[b.tmpl]
	}
}

func (r *runner) partitions(seconds float64) *PartitionReport {
	if r.loginsSent.Load() == 0 {
		return nil
	}
	return partitionReport(defaultSchemes(r.cfg.Partitions, r.cfg.HotUserRate, r.replicas()), seconds, r.eachAttempt)
}

// targetIndex returns Report.TargetOf: the recorded batches by their
// first id, each id found by its stream and counter (a batch of stream
// s holds the ids from its seq, a multiple of the stream's batch size).
func (r *runner) targetIndex() func(id []byte) (int, bool) {
	size := map[byte]int64{streamMain: int64(r.cfg.Batch), streamAttack: int64(attackBatch(r.cfg))}
	first := map[[2]int64]uint8{}
	for i := range r.recs {
		b := &r.recs[i]
		first[[2]int64{int64(b.stream), b.seq}] = b.target
	}
	prefix := r.c.runID + "-"
	return func(id []byte) (int, bool) {
		rest, ok := bytes.CutPrefix(id, []byte(prefix))
		if !ok || len(rest) != 1+seqWidth || size[rest[0]] == 0 {
			return 0, false
		}
		seq, err := strconv.ParseInt(string(rest[1:]), 10, 64)
		if err != nil {
			return 0, false
		}
		t, ok := first[[2]int64{int64(rest[0]), seq - seq%size[rest[0]]}]
		return int(t), ok
	}
}

// replicas is how many instances the partition report models.
func (r *runner) replicas() int {
	if r.cfg.Replicas > 0 {
		return r.cfg.Replicas
	}
	return len(r.targets)
}

// replicaOf is the modelled instance a batch went to: the target that took
// it, when the report models one instance per target, else the batch's
// turn in a round-robin over the modelled instances.
func (r *runner) replicaOf(b *sentBatch) int {
	n := r.replicas()
	if n == len(r.targets) {
		return int(b.target)
	}
	batch := int64(r.cfg.Batch)
	if b.stream == streamAttack {
		batch = int64(attackBatch(r.cfg))
	}
	return int(b.seq / batch % int64(n))
}
