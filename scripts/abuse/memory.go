package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"

	"ingest/internal/ingestexec"
)

// maxPeakRSS is the most a server with its default flags may reach under
// any memory attack, alone or 24 at once: its budgets (--buffer-bytes
// 256 MiB, --max-inflight-bytes 64 MiB) and room for the rest.
const maxPeakRSS = 512 << 20

// memoryAttack is requests that cost a server far more than they weigh.
// One more attack is one more row of memoryAttacks: it becomes a section of
// the command and a case of TestMemoryAttacks.
type memoryAttack struct {
	name, what string
	// requests builds what every client sends, in order; perClient, when
	// set instead, what client i sends.
	requests  func() []attackRequest
	perClient func(i int) []attackRequest
	// check, when set, is what must hold of the server's data directory
	// once it has stopped.
	check func(dataDir string) error
}

// attackRequest is one request of an attack.
type attackRequest struct {
	method string // "" is POST
	path   string
	header map[string]string
	body   []byte
}

// attackClients are the runs of every attack: one client, then 24 at once.
var attackClients = []int{1, 24}

var memoryAttacks = []memoryAttack{
	{name: "text", what: `16 MiB of "a\n" as text/plain: 8.4 million one-byte events`,
		requests: func() []attackRequest {
			return []attackRequest{post("text/plain", "", bytes.Repeat([]byte("a\n"), 8<<20))}
		}},
	{name: "gzip", what: `30 KB of gzip decoding to 30 MiB of "a\n" as text/plain`,
		requests: func() []attackRequest {
			return []attackRequest{post("text/plain", "gzip", compress("gzip", bytes.Repeat([]byte("a\n"), 15<<20)))}
		}},
	{name: "otlp", what: "16 MB of OTLP protobuf: 8 million empty log records",
		requests: func() []attackRequest {
			return []attackRequest{post("application/x-protobuf", "", otlpEmptyRecords(16_000_000))}
		}},
	{name: "otlp-json", what: "16 MB of OTLP JSON: 5.6 million empty log records",
		requests: func() []attackRequest {
			return []attackRequest{post("application/json", "", otlpJSONEmptyRecords(16_000_000))}
		}},
	{name: "zstd-bombs", what: "zstd bombs: 40 KB decoding to 1 GiB of zeros",
		requests: func() []attackRequest {
			return []attackRequest{post("application/x-ndjson", "zstd", bomb("zstd"))}
		}},
	{name: "services", what: "310 KB of NDJSON naming 10,000 services",
		requests: func() []attackRequest {
			var b []byte
			for i := range 10_000 {
				b = fmt.Appendf(b, `{"service":"svc%05d","msg":"x"}`+"\n", i)
			}
			return []attackRequest{post("application/x-ndjson", "", b)}
		},
		check: func(dataDir string) error {
			ents, err := os.ReadDir(filepath.Join(dataDir, "blobs", "logs"))
			if err != nil {
				return err
			}
			if len(ents) > 1000 {
				return fmt.Errorf("%d service directories, more than --max-service-hours-per-request (1,000)", len(ents))
			}
			return nil
		}},
	{name: "new-services", what: "310 KB of NDJSON naming 10,000 services, other ones from each client: the buffer's keys, and their chunks, past the caps",
		perClient: func(i int) []attackRequest {
			var b []byte
			for j := range 10_000 {
				b = fmt.Appendf(b, `{"service":"c%02d-%05d","msg":"x"}`+"\n", i, j)
			}
			return []attackRequest{post("application/x-ndjson", "", b)}
		}},
	{name: "hostile", what: "hostile bodies one after another: 1 GiB bombs of every encoding, a snappy block claiming 1 GiB, 10 MB lines, JSON nested 100,000 deep",
		requests: hostileRequests},
}

func post(contentType, encoding string, body []byte) attackRequest {
	h := map[string]string{"Content-Type": contentType}
	if encoding != "" {
		h["Content-Encoding"] = encoding
	}
	return attackRequest{path: "/v1/logs", header: h, body: body}
}

// compress encodes data with enc (gzip, zstd, deflate, snappy) at its
// best compression.
func compress(enc string, data []byte) []byte {
	var out bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w, _ = gzip.NewWriterLevel(&out, gzip.BestCompression)
	case "zstd":
		w, _ = zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	case "deflate":
		w, _ = flate.NewWriter(&out, flate.BestCompression)
	case "snappy":
		w = s2.NewWriter(&out, s2.WriterSnappyCompat())
	}
	_, err := w.Write(data)
	check(err)
	check(w.Close())
	return out.Bytes()
}

// bomb is 1 GiB of zeros: 64 MiB compressed with enc, repeated 16 times
// (gzip members, zstd frames and snappy streams may follow each other;
// deflate decodes the first, 64 MiB, which is the limit).
func bomb(enc string) []byte {
	one := compress(enc, make([]byte, 64<<20))
	if enc == "deflate" {
		return compress(enc, make([]byte, 65<<20))
	}
	return bytes.Repeat(one, 16)
}

// otlpEmptyRecords is an OTLP ExportLogsServiceRequest of about size bytes:
// one resource, one scope, and empty log records (two bytes each).
func otlpEmptyRecords(size int) []byte {
	scope := bytes.Repeat([]byte{2<<3 | 2, 0}, size/2)     // ScopeLogs.log_records = 2, empty
	rl := protowire.AppendTag(nil, 2, protowire.BytesType) // ResourceLogs.scope_logs = 2
	rl = protowire.AppendBytes(rl, scope)
	req := protowire.AppendTag(nil, 1, protowire.BytesType) // resource_logs = 1
	return protowire.AppendBytes(req, rl)
}

// otlpJSONEmptyRecords is the JSON form: {} records, three bytes each.
func otlpJSONEmptyRecords(size int) []byte {
	n := size / 3
	b := []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{}`)
	b = append(b, bytes.Repeat([]byte(`,{}`), n-1)...)
	return append(b, `]}]}]}`...)
}

// hostileRequests are the bodies the handler's hostile-input test sends,
// at full size against the default limits.
func hostileRequests() []attackRequest {
	line := func(msg string) string { return `{"msg":"` + msg + `"}` }
	huge := line(strings.Repeat("x", 10<<20))
	reqs := []attackRequest{}
	for _, enc := range []string{"gzip", "zstd", "deflate", "snappy"} {
		reqs = append(reqs, post("application/x-ndjson", enc, bomb(enc)))
	}
	snappyBlock := append(binary.AppendUvarint(nil, 1<<30), make([]byte, 100)...)
	return append(reqs,
		post("application/x-ndjson", "snappy", snappyBlock),
		post("application/x-ndjson", "", []byte(huge)),
		post("application/x-ndjson", "", []byte(line("before")+"\n"+huge+"\n"+line("after"))),
		post("text/plain", "", []byte(strings.Repeat("x", 10<<20))),
		post("application/x-ndjson", "", []byte(`{"msg":"deep","a":`+strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)+`}`)),
		post("application/x-ndjson", "", []byte(`{"msg":"deep","a":`+strings.Repeat(`{"a":`, 100_000)+"1"+strings.Repeat("}", 100_000)+`}`)),
		post("application/json", "", []byte(strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000))),
	)
}

// attackResult is what one run of an attack saw.
type attackResult struct {
	clients  int
	statuses map[string]int // "202", "413", "error: ..."
	peak     int64          // the server's VmHWM
	elapsed  time.Duration
	err      error // the attack's check
}

func (r attackResult) String() string {
	keys := make([]string, 0, len(r.statuses))
	for k := range r.statuses {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s x%d", k, r.statuses[k]))
	}
	s := fmt.Sprintf("%2d client(s): %s; peak RSS %.0f MiB; %.1f s", r.clients, strings.Join(parts, ", "), float64(r.peak)/(1<<20), r.elapsed.Seconds())
	if r.err != nil {
		s += "; " + r.err.Error()
	}
	return s
}

// runAttack starts a fresh server on bin with its data in dataDir and
// default flags, has n clients send reqs at once, stops the server (kills
// it when the attack has nothing to check in its data) and returns what
// the clients saw and the server's peak RSS.
func runAttack(bin, dataDir string, a memoryAttack, reqs []attackRequest, n int) (attackResult, error) {
	p, err := ingestexec.Serve(bin, 0, nil, "--data-dir", dataDir, "--log-level", "error")
	if err != nil {
		return attackResult{}, err
	}
	defer p.Kill()
	res := attackResult{clients: n, statuses: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	clients := make([][]attackRequest, n)
	for i := range clients {
		clients[i] = reqs
		if a.perClient != nil {
			clients[i] = a.perClient(i)
		}
	}
	// The peak is read as the attack goes too: a server that dies of it
	// leaves its last reading.
	peak := watchPeak(p)
	start := time.Now()
	for _, reqs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			for _, rq := range reqs {
				status := send(client, p.URL, rq)
				mu.Lock()
				res.statuses[status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	select {
	case <-p.Exited():
		res.err = fmt.Errorf("the server died: %s", p.Cmd.ProcessState)
		res.peak = peak()
		return res, nil
	default:
	}
	if a.check == nil {
		p.Kill() // nothing to read back: no need to wait for the flushes
		res.peak = peak()
		return res, nil
	}
	if _, err := p.Stop(3 * time.Minute); err != nil {
		return res, err
	}
	res.peak = peak()
	res.err = a.check(dataDir)
	return res, nil
}

// send sends one request and returns its status, or the error.
func send(client *http.Client, base string, rq attackRequest) string {
	status, _, err := exchange(client, base, rq)
	if err != nil {
		return shortError(err)
	}
	return fmt.Sprint(status)
}

// exchange sends one request (a POST unless rq.method says otherwise; a
// "Host" header sets the request's Host), reads the whole answer and
// returns its status and its first bytes.
func exchange(client *http.Client, base string, rq attackRequest) (status int, head string, err error) {
	method := rq.method
	if method == "" {
		method = "POST"
	}
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequest(method, base+rq.path, body)
	if err != nil {
		return 0, "", err
	}
	for k, v := range rq.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var first bytes.Buffer
	_, err = io.Copy(io.Discard, io.TeeReader(resp.Body, &limitedWriter{&first, 160}))
	return resp.StatusCode, first.String(), err
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	b *bytes.Buffer
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// runMemory is a's section: one client, then 24 at once, each against a
// fresh server; it fails when a peak passes --max-rss or a check fails.
func (r *runner) runMemory(a memoryAttack) bool {
	var reqs []attackRequest
	if a.requests != nil {
		reqs = a.requests()
	}
	ok := true
	for _, n := range attackClients {
		r.servers++
		res, err := runAttack(r.bin, filepath.Join(r.dir, fmt.Sprintf("data-%d", r.servers)), a, reqs, n)
		check(err)
		fmt.Println("  " + res.String())
		if res.peak > r.o.maxRSS || res.err != nil {
			fmt.Printf("FAIL: %s with %d client(s)\n", a.name, n)
			ok = false
		}
	}
	return ok
}

// shortError names a client error without its addresses, so that errors
// of a kind count together.
func shortError(err error) string {
	msg := err.Error()
	for _, kind := range []string{"connection reset", "broken pipe", "EOF", "timeout", "refused"} {
		if strings.Contains(msg, kind) {
			return "error: " + kind
		}
	}
	return "error: " + msg
}
