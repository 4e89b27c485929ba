package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/klauspost/compress/zstd"
	"github.com/valyala/fasthttp"
)

// lowEvent is one event of the low-cost client's bodies, which every
// encoding (NDJSON, Elasticsearch bulk, Loki push) carries alike.
type lowEvent struct {
	ts                   time.Time
	service, host, level string
	msg                  string
}

// lowCostEvents builds n events of about 170 bytes as NDJSON, with
// timestamps around now (VictoriaLogs drops rows older than its retention).
func lowCostEvents(n int, now time.Time) []lowEvent {
	levels := []string{"info", "info", "info", "debug", "warn", "error"}
	methods := []string{"GET", "GET", "POST", "PUT", "DELETE"}
	evs := make([]lowEvent, n)
	for i := range evs {
		evs[i] = lowEvent{ts: now.Add(time.Duration(i) * time.Microsecond).UTC(), service: fmt.Sprintf("svc-%d", i%8),
			host: fmt.Sprintf("web-%02d", i%24), level: levels[i%len(levels)],
			msg: fmt.Sprintf("%s /api/v1/orders/%d %d %d.%dms user=u%05d trace=%08x dc=eu-west-1", methods[i%len(methods)], 10000+i*7919%90000,
				[]int{200, 200, 201, 404, 500}[i%5], i%97, i%10, i*31%100000, uint32(i)*2654435761)}
	}
	return evs
}

// lowCostBody is lowCostEvents as NDJSON, one event per line. Every peer
// takes this body as application/json.
func lowCostBody(n int, now time.Time) []byte {
	var b bytes.Buffer
	for _, e := range lowCostEvents(n, now) {
		fmt.Fprintf(&b, `{"ts":"%s","service":"%s","host":"%s","level":"%s","msg":"%s"}`+"\n",
			e.ts.Format("2006-01-02T15:04:05.000000Z"), e.service, e.host, e.level, e.msg)
	}
	return b.Bytes()
}

func gzipBytes(b []byte) []byte {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.DefaultCompression)
	_, _ = zw.Write(b)
	check(zw.Close())
	return out.Bytes()
}

func zstdBytes(b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	check(err)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// load is what the low-cost client sends.
type load struct {
	addr     string // 127.0.0.1:PORT
	uri      string // full URL
	body     []byte
	encoding string // Content-Encoding, "" for none
	ctype    string // Content-Type, "" for application/json
	events   int    // events per body
	conns    int
	duration time.Duration
}

// blastResult is what the client saw.
type blastResult struct {
	requests, ok, errors int64
	secs                 float64
	lat                  *hdr.Histogram // µs
	firstBody            []byte         // the first 2xx answer's body
	firstStatus          int            // and its status
	firstErr             string
}

// blast re-sends one body on every connection, closed loop, for the
// duration. Its own cost is a request write and an answer read.
func blast(l load) blastResult {
	hc := &fasthttp.HostClient{
		Addr:                          l.addr,
		MaxConns:                      l.conns,
		ReadTimeout:                   60 * time.Second,
		WriteTimeout:                  60 * time.Second,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
	}
	defer hc.CloseIdleConnections()
	var res blastResult
	var mu sync.Mutex
	var ok, errs, reqs atomic.Int64
	res.lat = hdr.New(1, 60_000_000, 3)
	start := time.Now()
	deadline := start.Add(l.duration)
	var wg sync.WaitGroup
	for range l.conns {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(l.uri)
			req.Header.SetContentType(cmp.Or(l.ctype, "application/json"))
			if l.encoding != "" {
				req.Header.Set("Content-Encoding", l.encoding)
			}
			req.SetBodyRaw(l.body)
			lat := hdr.New(1, 60_000_000, 3)
			for time.Now().Before(deadline) {
				t0 := time.Now()
				err := hc.DoTimeout(req, resp, 60*time.Second)
				reqs.Add(1)
				code := resp.StatusCode()
				if err != nil || code/100 != 2 {
					errs.Add(1)
					mu.Lock()
					if res.firstErr == "" {
						if err != nil {
							res.firstErr = err.Error()
						} else {
							res.firstErr = fmt.Sprintf("%d %s", code, bytes.TrimSpace(resp.Body()))
						}
					}
					mu.Unlock()
					if err != nil {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				_ = lat.RecordValue(max(1, time.Since(t0).Microseconds()))
				if ok.Add(1) == 1 {
					mu.Lock()
					res.firstBody, res.firstStatus = append([]byte(nil), resp.Body()...), code
					mu.Unlock()
				}
			}
			mu.Lock()
			res.lat.Merge(lat)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.secs = time.Since(start).Seconds()
	res.requests, res.ok, res.errors = reqs.Load(), ok.Load(), errs.Load()
	return res
}

func (r blastResult) fill(out *result, events int) {
	out.answered = float64(r.ok) * float64(events) / r.secs
	out.errors = r.errors
	if r.lat.TotalCount() > 0 {
		out.p50 = float64(r.lat.ValueAtQuantile(50)) / 1000
		out.p99 = float64(r.lat.ValueAtQuantile(99)) / 1000
		out.p999 = float64(r.lat.ValueAtQuantile(99.9)) / 1000
	}
	if r.errors > 0 {
		fmt.Fprintf(stderr, "bench:     %d failed requests, the first: %s\n", r.errors, r.firstErr)
	}
}

// lowCost runs the low-cost client against ingest and each given peer.
func (b *bench) lowCost() {
	now := time.Now()
	body := lowCostBody(b.o.lowEvents, now)
	mk := func(addr, path string) load {
		return load{addr: addr, uri: "http://" + addr + path, body: body, events: b.o.lowEvents, conns: b.o.lowConns, duration: b.o.duration}
	}
	per := fmt.Sprintf("%d conns x %d events, %d B/event", b.o.lowConns, b.o.lowEvents, len(body)/b.o.lowEvents)

	l := mk("", "")
	b.add("lowcost: ingest --ack wal", per+", application/json, answered after fsync", b.lowCostIngest(l))
	gz := l
	gz.body, gz.encoding = gzipBytes(body), "gzip"
	b.add("lowcost: ingest --ack wal, gzip", fmt.Sprintf("the same body gzip'd by the client (%d -> %d B)", len(body), len(gz.body)), b.lowCostIngest(gz))
	zs := l
	zs.body, zs.encoding = zstdBytes(body), "zstd"
	b.add("lowcost: ingest --ack wal, zstd", fmt.Sprintf("the same body zstd'd by the client (%d -> %d B)", len(body), len(zs.body)), b.lowCostIngest(zs))

	if b.o.fluentBit != "" {
		b.add("lowcost: fluent-bit", "in_http -> out_file (Format plain); answers before writing and never fsyncs: written/s counts lines in the file, from the first request to the last line", b.fluentBitRow(body))
	}
	if b.o.victoriaLogs != "" {
		b.add("lowcost: victoria-logs", "/insert/jsonline (_stream_fields=service,host); answers once rows are in its memory buffers, no fsync", b.victoriaRow(body))
	}
	evs := lowCostEvents(b.o.lowEvents, now)
	b.protocolRows(evs)
	b.syslogRows(evs)
}

func (b *bench) lowCostIngest(l load) result {
	srv, cleanup := b.serveFresh("--ack", "wal")
	defer cleanup()
	l.addr = srv.URL[len("http://"):]
	l.uri = srv.URL + "/v1/logs"
	out, res := measure(l, srv.Cmd.Process.Pid, b.disk)
	if res.ok > 0 && !bytes.Contains(res.firstBody, fmt.Appendf(nil, `"accepted":%d`, l.events)) {
		check(fmt.Errorf("ingest did not accept every event of the low-cost body: %s", res.firstBody))
	}
	_, err := srv.Stop(time.Minute)
	check(err)
	return out
}

// measure runs the low-cost load l against process pid: its rates, the
// process's CPU seconds per million events, the MB/s written to dev
// meanwhile and the process's peak RSS.
func measure(l load, pid int, dev blockDevice) (result, blastResult) {
	cpu0, disk0 := cpuSeconds(pid), dev.written()
	res := blast(l)
	cpu, disk := cpuSeconds(pid)-cpu0, dev.written()-disk0
	var out result
	res.fill(&out, l.events)
	out.diskMBps = disk / res.secs / 1e6
	out.rssMiB = peakRSSMiB(pid)
	if res.ok > 0 {
		out.cpuPerM = cpu / (float64(res.ok) * float64(l.events) / 1e6)
	}
	return out, res
}

// fluentBitRow runs Fluent Bit as in_http -> out_file and counts the lines
// it wrote, from the first request until the file stops growing.
func (b *bench) fluentBitRow(body []byte) result {
	dir, err := os.MkdirTemp(b.dir, "fluent-bit-")
	check(err)
	defer os.RemoveAll(dir)
	addr := freeAddr()
	host, port := splitAddr(addr)
	conf := filepath.Join(dir, "fluent-bit.conf")
	outDir := filepath.Join(dir, "out")
	check(os.WriteFile(conf, fmt.Appendf(nil, `[SERVICE]
    Flush        1
    Grace        1
    Log_Level    error
    HTTP_Server  Off

[INPUT]
    Name              http
    Listen            %s
    Port              %s
    Buffer_Max_Size   16M
    Buffer_Chunk_Size 512K
    Successful_Response_Code 200

[OUTPUT]
    Name    file
    Match   *
    Path    %s
    Mkdir   On
    Format  plain
`, host, port, outDir), 0o644))
	p, err := startProc(nil, b.o.fluentBit, "-c", conf)
	check(err)
	defer p.stop()
	check(p.waitHTTP("http://"+addr+"/", true))
	l := load{addr: addr, uri: "http://" + addr + "/bench", body: body, events: b.o.lowEvents, conns: b.o.lowConns, duration: b.o.duration}
	cpu0, disk0 := cpuSeconds(p.pid()), b.disk.written()
	start := time.Now()
	res := blast(l)
	// Written end to end: wait until the file stops growing.
	file := filepath.Join(outDir, "bench")
	var size int64
	last := time.Now()
	for time.Since(last) < 3*time.Second {
		time.Sleep(100 * time.Millisecond)
		if st, err := os.Stat(file); err == nil && st.Size() != size {
			size, last = st.Size(), time.Now()
		}
	}
	cpu, disk := cpuSeconds(p.pid())-cpu0, b.disk.written()-disk0
	lines := countLines(file)
	var out result
	res.fill(&out, l.events)
	out.written = float64(lines) / last.Sub(start).Seconds()
	out.diskMBps = disk / last.Sub(start).Seconds() / 1e6
	out.rssMiB = peakRSSMiB(p.pid())
	if lines > 0 {
		out.cpuPerM = cpu / (float64(lines) / 1e6)
	}
	return out
}

func countLines(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err != nil {
			return n
		}
	}
}

// victoriaRow runs VictoriaLogs on an empty data directory and posts body
// to /insert/jsonline.
func (b *bench) victoriaRow(body []byte) result {
	l := load{body: body, events: b.o.lowEvents, conns: b.o.lowConns, duration: b.o.duration}
	return b.victoriaRowAt(l, "/insert/jsonline?_stream_fields=service,host&_msg_field=msg&_time_field=ts")
}

// victoriaRowAt runs VictoriaLogs on an empty data directory and sends l
// to path (with its query).
func (b *bench) victoriaRowAt(l load, path string) result {
	p, addr, stop := b.startVictoria()
	defer stop()
	l.addr, l.uri = addr, "http://"+addr+path
	out, res := measure(l, p.pid(), b.disk)
	// It answers before its buffers reach storage: make sure rows did.
	time.Sleep(2 * time.Second)
	rows := victoriaRows(addr)
	fmt.Fprintf(stderr, "bench:     victoria-logs holds %d rows of %d answered\n", rows, res.ok*int64(l.events))
	if res.ok > 0 && rows == 0 {
		check(fmt.Errorf("victoria-logs answered %d requests to %s but stored no row", res.ok, path))
	}
	return out
}

// startVictoria starts VictoriaLogs on an empty data directory with args
// added, and waits until it answers on addr; stop stops it and removes the
// directory.
func (b *bench) startVictoria(args ...string) (p *proc, addr string, stop func()) {
	dir, err := os.MkdirTemp(b.dir, "victoria-logs-")
	check(err)
	addr = freeAddr()
	p, err = startProc(nil, b.o.victoriaLogs, append([]string{"-storageDataPath", dir, "-httpListenAddr", addr, "-loggerLevel", "ERROR"}, args...)...)
	if err != nil {
		os.RemoveAll(dir)
		check(err)
	}
	stop = func() {
		p.stop()
		os.RemoveAll(dir)
	}
	if err := p.waitHTTP("http://"+addr+"/health", false); err != nil {
		stop()
		check(err)
	}
	return p, addr, stop
}

// victoriaRows counts the rows VictoriaLogs stored; -1 when it cannot tell.
func victoriaRows(addr string) int64 {
	resp, err := http.PostForm("http://"+addr+"/select/logsql/query", url.Values{"query": {"* | stats count() rows"}})
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var v struct {
		Rows string `json:"rows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return -1
	}
	n, err := strconv.ParseInt(v.Rows, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func splitAddr(addr string) (string, string) {
	i := bytes.LastIndexByte([]byte(addr), ':')
	return addr[:i], addr[i+1:]
}
