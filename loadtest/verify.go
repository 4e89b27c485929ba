package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/bits"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// VerifyReport is what reading the run back found. Only ids with the run's
// prefix count; the other events in the window are someone else's.
type VerifyReport struct {
	Sent       int64        `json:"sent"`       // ids sent
	Accepted   int64        `json:"accepted"`   // ids the server acknowledged
	Found      int64        `json:"found"`      // distinct ids of this run read back
	Lost       int64        `json:"lost"`       // acknowledged but not found
	Duplicated int64        `json:"duplicated"` // ids found more than once
	Copies     int64        `json:"copies"`     // extra copies beyond the first
	Unacked    int64        `json:"unacked"`    // found although not acknowledged (e.g. a timed-out request that landed)
	Foreign    int64        `json:"foreign"`    // this run's prefix but never sent: a corrupted id
	Logs       VerifyCounts `json:"logs"`
	Logins     VerifyCounts `json:"logins"`
	LostSample []string     `json:"lost_sample,omitempty"`
	DupSample  []string     `json:"dup_sample,omitempty"`
	Queries    int          `json:"queries"`
	Lines      int64        `json:"lines"`     // records read
	BadLines   int64        `json:"bad_lines"` // records that were not JSON objects
	Failed     []string     `json:"failed_queries,omitempty"`
	Seconds    float64      `json:"seconds"`
}

// VerifyCounts splits the verdict by endpoint.
type VerifyCounts struct {
	Accepted   int64 `json:"accepted"`
	Found      int64 `json:"found"`
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
}

const sampleIDs = 10

type bitset []uint64

func newBitset(n int64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int64)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) has(i int64) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) setRange(lo, n int64) {
	for i := lo; i < lo+n; i++ {
		b.set(i)
	}
}

// idSpace tracks one stream's ids by counter.
type idSpace struct {
	stream   byte
	size     int64
	sent     bitset
	accepted bitset
	unknown  bitset // no usable answer: neither lost nor unacked
	logins   bitset
	seen     bitset
	dup      bitset
}

func newIDSpace(stream byte, size int64) *idSpace {
	return &idSpace{
		stream: stream, size: size,
		sent: newBitset(size), accepted: newBitset(size), unknown: newBitset(size),
		logins: newBitset(size), seen: newBitset(size), dup: newBitset(size),
	}
}

// ledger is what was sent and what came back, for one run.
type ledger struct {
	prefix  string // runID + "-"
	spaces  map[byte]*idSpace
	mu      sync.Mutex
	rep     VerifyReport
	foreign int64
}

func newLedger(runID string, recs []sentBatch) *ledger {
	l := &ledger{prefix: runID + "-", spaces: map[byte]*idSpace{}}
	size := map[byte]int64{}
	for i := range recs {
		b := &recs[i]
		size[b.stream] = max(size[b.stream], b.seq+int64(b.n))
	}
	for s, n := range size {
		l.spaces[s] = newIDSpace(s, n)
	}
	for i := range recs {
		b := &recs[i]
		sp := l.spaces[b.stream]
		n := int64(b.n)
		sp.sent.setRange(b.seq, n)
		if b.kind == kindLogins {
			sp.logins.setRange(b.seq, n)
		}
		switch b.state {
		case stAccepted:
			sp.accepted.setRange(b.seq, n)
		case stPartial:
			sp.accepted.setRange(b.seq, n)
			for _, line := range b.rejected {
				if j := int64(line) - 1; j >= 0 && j < n {
					sp.accepted[(b.seq+j)>>6] &^= 1 << ((b.seq + j) & 63)
				}
			}
		case stUnknown:
			sp.unknown.setRange(b.seq, n)
		}
	}
	return l
}

// parseID returns the stream and counter of one of this run's ids.
func (l *ledger) parseID(id []byte) (sp *idSpace, seq int64, ok bool) {
	if !bytes.HasPrefix(id, []byte(l.prefix)) {
		return nil, 0, false
	}
	rest := id[len(l.prefix):]
	if len(rest) != 1+seqWidth {
		return nil, -1, true
	}
	sp = l.spaces[rest[0]]
	for _, c := range rest[1:] {
		if c < '0' || c > '9' {
			return nil, -1, true
		}
		seq = seq*10 + int64(c-'0')
	}
	if sp == nil || seq >= sp.size || !sp.sent.has(seq) {
		return nil, -1, true
	}
	return sp, seq, true
}

// see records one id read back.
func (l *ledger) see(id []byte) {
	sp, seq, ours := l.parseID(id)
	if !ours {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if sp == nil {
		l.foreign++
		return
	}
	if sp.seen.has(seq) {
		sp.dup.set(seq)
		l.rep.Copies++
		return
	}
	sp.seen.set(seq)
}

// verdict counts lost and duplicated ids.
func (l *ledger) verdict(c *corpus) *VerifyReport {
	r := l.rep
	r.Foreign = l.foreign
	streams := make([]byte, 0, len(l.spaces))
	for s := range l.spaces {
		streams = append(streams, s)
	}
	sort.Slice(streams, func(i, j int) bool { return streams[i] < streams[j] })
	for _, s := range streams {
		sp := l.spaces[s]
		for w := range sp.sent {
			sent, acc, unk, seen, dup, lg := sp.sent[w], sp.accepted[w], sp.unknown[w], sp.seen[w], sp.dup[w], sp.logins[w]
			lost := acc &^ seen
			r.Sent += int64(bits.OnesCount64(sent))
			r.Accepted += int64(bits.OnesCount64(acc))
			r.Found += int64(bits.OnesCount64(seen))
			r.Lost += int64(bits.OnesCount64(lost))
			r.Duplicated += int64(bits.OnesCount64(dup))
			r.Unacked += int64(bits.OnesCount64(seen &^ acc &^ unk))
			for _, part := range []struct {
				c    *VerifyCounts
				mask uint64
			}{{&r.Logs, ^lg}, {&r.Logins, lg}} {
				part.c.Accepted += int64(bits.OnesCount64(acc & part.mask))
				part.c.Found += int64(bits.OnesCount64(seen & part.mask))
				part.c.Lost += int64(bits.OnesCount64(lost & part.mask))
				part.c.Duplicated += int64(bits.OnesCount64(dup & part.mask))
			}
			for ; lost != 0 && len(r.LostSample) < sampleIDs; lost &= lost - 1 {
				seq := int64(w)*64 + int64(bits.TrailingZeros64(lost))
				r.LostSample = append(r.LostSample, string(c.appendID(nil, s, seq)))
			}
			for ; dup != 0 && len(r.DupSample) < sampleIDs; dup &= dup - 1 {
				seq := int64(w)*64 + int64(bits.TrailingZeros64(dup))
				r.DupSample = append(r.DupSample, string(c.appendID(nil, s, seq)))
			}
		}
	}
	return &r
}

// verifyQuery is one read-back request.
type verifyQuery struct {
	url  string
	what string
}

// verifyRun reads back everything listed in queries, in parallel, and
// reports against the ledger.
func verifyRun(ctx context.Context, l *ledger, c *corpus, queries []verifyQuery, g *getter) (*VerifyReport, error) {
	start := time.Now()
	var (
		mu     sync.Mutex
		failed []string
		lines  int64
		bad    int64
		wg     sync.WaitGroup
		work   = make(chan verifyQuery)
	)
	for range min(8, len(queries)) {
		wg.Go(func() {
			var p fastjson.Parser
			for q := range work {
				n, b, err := g.readBack(ctx, q.url, &p, l.see)
				mu.Lock()
				lines += n
				bad += b
				if err != nil {
					failed = append(failed, q.what+": "+err.Error())
				}
				mu.Unlock()
			}
		})
	}
	for _, q := range queries {
		select {
		case work <- q:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	r := l.verdict(c)
	r.Queries = len(queries)
	r.Lines = lines
	r.BadLines = bad
	sort.Strings(failed)
	r.Failed = failed
	r.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		return r, fmt.Errorf("cannot verify: %w", ctx.Err())
	}
	if len(failed) > 0 {
		return r, fmt.Errorf("cannot verify completely: %d of %d queries failed (first: %s); lost counts are upper bounds", len(failed), len(queries), failed[0])
	}
	return r, nil
}

// getter reads query answers as streams.
type getter struct {
	hc    *fasthttp.HostClient
	token string
}

// readBackTimeout bounds one query, the whole answer included: a service's
// events of a long run can be millions of lines.
const readBackTimeout = 30 * time.Minute

func newGetter(tgt target, token string) *getter {
	return &getter{
		token: token,
		hc: &fasthttp.HostClient{
			Addr:                          tgt.addr,
			IsTLS:                         tgt.tls,
			Name:                          "ingest-loadtest-verify",
			MaxConns:                      16,
			StreamResponseBody:            true,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
		},
	}
}

// readBack GETs one query and feeds every record's id to see. It accepts
// NDJSON, a JSON array, or an object wrapping an array, and takes the id
// from "id" or else from a RowKey "<ticks>_<id>". A 404 is an empty answer.
func (g *getter) readBack(ctx context.Context, u string, p *fastjson.Parser, see func([]byte)) (lines, bad int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(u)
	req.Header.SetMethod(fasthttp.MethodGet)
	req.Header.Set("Accept", "application/x-ndjson, application/json")
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	if err := g.hc.DoTimeout(req, resp, readBackTimeout); err != nil {
		return 0, 0, err
	}
	defer resp.CloseBodyStream()
	var body io.Reader = bytes.NewReader(resp.Body())
	if s := resp.BodyStream(); s != nil {
		body = s
	}
	switch code := resp.StatusCode(); code {
	case fasthttp.StatusOK:
	case fasthttp.StatusNotFound:
		return 0, 0, nil
	default:
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		return 0, 0, fmt.Errorf("status %d: %s", code, strings.TrimSpace(string(msg)))
	}
	return readRecords(body, p, see)
}

// readRecords parses an answer body.
func readRecords(body io.Reader, p *fastjson.Parser, see func([]byte)) (lines, bad int64, err error) {
	br := bufio.NewReaderSize(body, 256<<10)
	first, err := peekNonSpace(br)
	if err == io.EOF {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if first == '[' {
		all, err := io.ReadAll(br)
		if err != nil {
			return 0, 0, err
		}
		v, err := p.ParseBytes(all)
		if err != nil {
			return 1, 1, fmt.Errorf("cannot parse JSON array answer: %v", err)
		}
		arr, _ := v.Array()
		for _, e := range arr {
			lines++
			if !visit(e, see) {
				bad++
			}
		}
		return lines, bad, nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 256<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		v, err := p.ParseBytes(line)
		if err != nil {
			lines++
			bad++
			continue
		}
		if arr := wrappedArray(v); arr != nil {
			for _, e := range arr {
				lines++
				if !visit(e, see) {
					bad++
				}
			}
			continue
		}
		lines++
		if !visit(v, see) {
			bad++
		}
	}
	if err := sc.Err(); err != nil {
		return lines, bad, fmt.Errorf("cannot read answer: %w", err)
	}
	return lines, bad, nil
}

// wrappedArray returns the array of objects of {"events":[...]}-style
// answers: an object without an id whose single array holds the records.
func wrappedArray(v *fastjson.Value) []*fastjson.Value {
	o, err := v.Object()
	if err != nil || v.Exists("id") || v.Exists("RowKey") {
		return nil
	}
	var arr []*fastjson.Value
	o.Visit(func(_ []byte, e *fastjson.Value) {
		if a, err := e.Array(); err == nil && arr == nil {
			arr = a
		}
	})
	return arr
}

func visit(v *fastjson.Value, see func([]byte)) bool {
	if v.Type() != fastjson.TypeObject {
		return false
	}
	if id := v.GetStringBytes("id"); id != nil {
		see(id)
		return true
	}
	for _, k := range []string{"RowKey", "rowkey", "row_key"} {
		if rk := v.GetStringBytes(k); rk != nil {
			if i := bytes.IndexByte(rk, '_'); i >= 0 {
				see(rk[i+1:])
			}
			return true
		}
	}
	return true
}

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, br.UnreadByte()
	}
}

// verify reads the run back through the first target, once every target
// still answering has stored what it accepted: every service's logs over
// the run's window, padded by a minute each side, and every user's login
// attempts.
func (r *runner) verify(ctx context.Context, end time.Time) (*VerifyReport, error) {
	tgts, _ := parseTargets(r.cfg.Target)
	tgt := tgts[0]
	l := newLedger(r.c.runID, r.recs)
	from := r.start.Add(-time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)
	to := end.Add(time.Minute).UTC().Truncate(time.Second).Add(time.Second).Format(time.RFC3339)
	var queries []verifyQuery
	for _, s := range r.c.services {
		q := url.Values{"service": {s}, "from": {from}, "to": {to}, "limit": {"0"}}
		queries = append(queries, verifyQuery{url: tgt.base + "/v1/logs?" + q.Encode(), what: "logs of " + s})
	}
	for user, n := range r.loginUsers() {
		q := url.Values{"days": {"2"}, "limit": {fmt.Sprint(2*n + 100)}}
		queries = append(queries, verifyQuery{url: tgt.base + "/v1/logins/" + url.PathEscape(user) + "?" + q.Encode(), what: "logins of " + user})
	}
	sort.Slice(queries, func(i, j int) bool { return queries[i].url < queries[j].url })
	for _, t := range tgts[1:] {
		g := newGetter(t, r.cfg.Token)
		g.waitDrained(ctx, t.base, drainTimeout)
		g.hc.CloseIdleConnections()
	}
	g := newGetter(tgt, r.cfg.Token)
	defer g.hc.CloseIdleConnections()
	g.waitDrained(ctx, tgt.base, drainTimeout)
	return verifyRun(ctx, l, r.c, queries, g)
}

// drainTimeout bounds the wait for the server to store what it accepted.
const drainTimeout = 2 * time.Minute

// waitDrained waits until the server holds nothing it has not yet stored:
// an acknowledged event may still be in its buffer (with --ack wal it is
// safe in the write-ahead log, but not yet readable). It polls the
// ingest_buffer_bytes gauge of /metrics until it reads 0 twice in a row;
// a server without that gauge gets a fixed pause instead, and one that
// does not answer (an instance gone, whose log someone else drains) none.
func (g *getter) waitDrained(ctx context.Context, base string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	zeros := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		held, ok, reached := g.bufferBytes(base)
		if !reached {
			return
		}
		if !ok {
			time.Sleep(5 * time.Second)
			return
		}
		if held == 0 {
			if zeros++; zeros == 2 {
				return
			}
		} else {
			zeros = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bufferBytes reads ingest_buffer_bytes from the server's /metrics;
// reached is false when the server did not answer.
func (g *getter) bufferBytes(base string) (held float64, ok, reached bool) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(base + "/metrics")
	if g.token != "" {
		req.Header.Set("Authorization", "Bearer "+g.token)
	}
	if err := g.hc.DoTimeout(req, resp, 10*time.Second); err != nil {
		return 0, false, false
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return 0, false, true
	}
	body, err := resp.BodyUncompressed()
	if err != nil {
		return 0, false, true
	}
	held, ok = metricValue(body, "ingest_buffer_bytes")
	return held, ok, true
}

// metricValue finds an unlabelled sample in Prometheus text format.
func metricValue(text []byte, name string) (float64, bool) {
	for _, line := range bytes.Split(text, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte(name+" ")); ok {
			f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// loginUsers counts the attempts sent per user.
func (r *runner) loginUsers() map[string]int64 {
	byRank := map[int32]int64{}
	for i := range r.recs {
		b := &r.recs[i]
		if b.kind != kindLogins {
			continue
		}
		for _, u := range r.templateOf(b).users[:b.n] {
			byRank[u]++
		}
	}
	out := make(map[string]int64, len(byRank))
	for rank, n := range byRank {
		out[string(r.c.userName(nil, rank))] = n
	}
	return out
}

func (v *VerifyReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "  verify         sent %s  accepted %s  found %s  lost %s  duplicated %s (%s extra copies)  unacked-but-found %s\n",
		human(v.Sent), human(v.Accepted), human(v.Found), human(v.Lost), human(v.Duplicated), human(v.Copies), human(v.Unacked))
	fmt.Fprintf(w, "                 logs: accepted %s found %s lost %s dup %s | logins: accepted %s found %s lost %s dup %s\n",
		human(v.Logs.Accepted), human(v.Logs.Found), human(v.Logs.Lost), human(v.Logs.Duplicated),
		human(v.Logins.Accepted), human(v.Logins.Found), human(v.Logins.Lost), human(v.Logins.Duplicated))
	fmt.Fprintf(w, "                 %d queries, %s records read (%s unparsable) in %.1fs\n", v.Queries, human(v.Lines), human(v.BadLines), v.Seconds)
	if v.Foreign > 0 {
		fmt.Fprintf(w, "                 %s ids with this run's prefix were never sent (corrupted ids)\n", human(v.Foreign))
	}
	if len(v.LostSample) > 0 {
		fmt.Fprintf(w, "                 lost e.g. %s\n", strings.Join(v.LostSample, " "))
	}
	if len(v.DupSample) > 0 {
		fmt.Fprintf(w, "                 duplicated e.g. %s\n", strings.Join(v.DupSample, " "))
	}
}
