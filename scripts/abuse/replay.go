package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"ingest/internal/ingestexec"
)

// replay is a section of attacks judged one by one: each prints what was
// sent, what came back and PASS or FAIL, so an operator sees which attack
// a build does not withstand. One more is one more row of replays; the
// quick ones are cases of TestReplays too.
type replay struct {
	name, what string
	run        func(r *runner)
}

var replays = []replay{
	{"crashes", "queries that ended or stalled older builds: ranges from 1700 or to 9999, absurd histogram steps, the page link of such a range", runCrashes},
	{"tokens", "a tokens file listing a token twice (at start and on SIGHUP), a token limited to services writing another", runTokens},
	{"defaults", "a server on 127.0.0.1 without tokens: a foreign Host, cross-site writes, profiles from this machine and through a proxy", runDefaults},
	{"tail-readers", "tail readers that never read while a writer posts (--tail-readers, --duration)", runTailReaders},
}

// verdict is one attack: what was sent, what came back, whether that is
// what the server must answer.
type verdict struct {
	sent, got string
	ok        bool
}

func (v verdict) String() string {
	mark := "PASS"
	if !v.ok {
		mark = "FAIL"
	}
	return fmt.Sprintf("  %s  %s -> %s", mark, v.sent, v.got)
}

// runReplay runs rp and returns whether every verdict passed.
func (r *runner) runReplay(rp replay) bool {
	report := r.report
	ok := true
	r.report = func(v verdict) {
		ok = ok && v.ok
		if report != nil {
			report(v)
		} else {
			fmt.Println(v)
		}
	}
	defer func() { r.report = report }()
	rp.run(r)
	return ok
}

// judge reports one verdict and returns ok.
func (r *runner) judge(ok bool, sent, got string, args ...any) bool {
	r.report(verdict{sent: sent, got: fmt.Sprintf(got, args...), ok: ok})
	return ok
}

// startOrFail starts a server for a section; a server that does not start
// (a build that does not know a flag) is the section's failure, reported.
func (r *runner) startOrFail(what string, args ...string) *ingestexec.Process {
	p, err := r.start(nil, args...)
	if err != nil {
		r.judge(false, "start a server "+what, "%s", firstLines(err.Error(), 3))
		return nil
	}
	return p
}

// healthy asks /healthz and returns whether it answered 200, and how it
// answered.
func healthy(p *ingestexec.Process) (bool, string) {
	select {
	case <-p.Exited():
		return false, fmt.Sprintf("the server died: %s; %s", p.Cmd.ProcessState, panicLine(p.Stderr()))
	default:
	}
	client := &http.Client{Timeout: 5 * time.Second}
	status, _, err := exchange(client, p.URL, attackRequest{method: "GET", path: "/healthz"})
	if err != nil {
		return false, "/healthz: " + shortError(err)
	}
	return status == http.StatusOK, fmt.Sprintf("/healthz %d", status)
}

// panicLine is the first line of a Go panic or fatal error in stderr, or
// "no panic logged".
func panicLine(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			return line
		}
	}
	return "no panic logged"
}

// firstLines is s's first n non-empty lines, joined by " | ".
func firstLines(s string, n int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" && len(out) < n {
			out = append(out, line)
		}
	}
	return strings.Join(out, " | ")
}

// oneLine is s on one line (NULs, which separate the words of a command
// line, as spaces), cut to 200 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\x00", " ")), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// crashRequest is one query of the crashes section; far ones have their
// CPU time bounded by --max-request-cpu.
type crashRequest struct {
	path string
	far  bool
}

// crashRequests are queries that ended or stalled older builds: a
// histogram over 1700..now (a slice of millions of buckets), the query
// page's link to such a range and the two queries the page then sends
// (its chart at 168h steps, its rows), histogram steps below a second,
// above any range, negative, and ranges ending in 2261 or 9999 (an hour
// loop over centuries; time arithmetic past what time.Duration holds).
var crashRequests = []crashRequest{
	{"/v1/logs?service=x&from=1700-01-01T00:00:00Z&to=now&histogram=1h", true},
	{"/?service=*&from=1700-01-01T00:00:00Z&to=now", false},
	{"/v1/logs?service=*&from=1700-01-01T00:00:00Z&to=now&histogram=168h", true},
	{"/v1/logs?service=*&from=1700-01-01T00:00:00Z&to=now&limit=100000", true},
	{"/v1/logs?service=x&histogram=1ns", false},
	{"/v1/logs?service=x&histogram=100000h", false},
	{"/v1/logs?service=x&histogram=-1h", false},
	{"/v1/logs?service=x&from=now&to=9999-12-31T00:00:00Z", true},
	{"/v1/logs?service=x&from=9999-01-01T00:00:00Z&to=9999-12-31T00:00:00Z&histogram=1h", true},
	{"/v1/logs?service=x&from=now&to=9999-12-31T00:00:00Z&order=desc", true},
	{"/v1/logs?service=x&order=desc&from=now&to=2261-12-31T00:00:00Z", true},
}

// crashTimeout is how long a crashes query may take before it fails (and
// its server is replaced, as it may still be spinning).
const crashTimeout = 60 * time.Second

// runCrashes sends every crash request to a server holding a few events of
// service x; each passes when the answer is 200 or 400, /healthz still
// answers 200 and, for the far ranges, the server spent at most
// --max-request-cpu on it. A server that died or stalled is replaced
// before the next request, so each is judged alone.
func runCrashes(r *runner) {
	var p *ingestexec.Process
	defer func() {
		if p != nil {
			p.Kill()
		}
	}()
	client := &http.Client{Timeout: crashTimeout}
	for _, q := range crashRequests {
		if p == nil {
			if p = r.startOrFail("for the crash queries"); p == nil {
				return
			}
			send(client, p.URL, post("application/x-ndjson", "", []byte(`{"service":"x","msg":"one"}`+"\n"+`{"service":"x","msg":"two"}`+"\n")))
		}
		pid := p.Cmd.Process.Pid
		cpu0, _ := ingestexec.CPUSeconds(pid)
		status, head, err := exchange(client, p.URL, attackRequest{method: "GET", path: q.path})
		cpu1, cpuErr := ingestexec.CPUSeconds(pid)
		up, health := healthy(p)
		got := fmt.Sprintf("%d %s", status, oneLine(head))
		if err != nil {
			got = shortError(err)
		}
		ok := err == nil && (status == http.StatusOK || status == http.StatusBadRequest) && up
		cpu := ""
		if q.far && cpuErr == nil {
			ok = ok && cpu1-cpu0 <= r.o.maxRequestCPU.Seconds()
			cpu = fmt.Sprintf("; CPU %.2f s (at most %s)", cpu1-cpu0, r.o.maxRequestCPU)
		}
		r.judge(ok, "GET "+q.path, "%s; %s%s", got, health, cpu)
		if !up || err != nil {
			p.Kill()
			p = nil
		}
	}
}

// runDefaults checks what docs/contract.md promises of a server listening
// on 127.0.0.1 without --tokens (with --pprof): Host must name the server,
// except for the probes; a browser's cross-site write is refused, a
// program's write is not; profiles (their command line, which may hold a
// storage key) answer this machine, not a proxy.
func runDefaults(r *runner) {
	p := r.startOrFail("on 127.0.0.1 without --tokens, with --pprof", "--pprof")
	if p == nil {
		return
	}
	defer p.Kill()
	event := []byte(`{"service":"x","msg":"from a page?"}` + "\n")
	write := func(h map[string]string) attackRequest {
		rq := post("application/x-ndjson", "", event)
		for k, v := range h {
			rq.header[k] = v
		}
		return rq
	}
	get := func(path string, h map[string]string) attackRequest {
		return attackRequest{method: "GET", path: path, header: h}
	}
	cases := []struct {
		sent string
		rq   attackRequest
		want int
	}{
		{"GET /v1/logs?service=x with Host: evil.example (DNS rebinding)", get("/v1/logs?service=x", map[string]string{"Host": "evil.example"}), 421},
		{"GET /healthz with Host: evil.example (a probe by any name)", get("/healthz", map[string]string{"Host": "evil.example"}), 200},
		{"POST /v1/logs with Sec-Fetch-Site: cross-site", write(map[string]string{"Sec-Fetch-Site": "cross-site"}), 403},
		{"POST /v1/logs with Origin: http://evil.example", write(map[string]string{"Origin": "http://evil.example"}), 403},
		{"POST /v1/logs with Origin: null", write(map[string]string{"Origin": "null"}), 403},
		{"POST /v1/logs with Sec-Fetch-Site: same-origin", write(map[string]string{"Sec-Fetch-Site": "same-origin"}), 202},
		{"POST /v1/logs from a program (no Sec-Fetch-Site, no Origin)", write(nil), 202},
		{"GET /debug/pprof/cmdline from 127.0.0.1", get("/debug/pprof/cmdline", nil), 200},
		{"GET /debug/pprof/cmdline with X-Forwarded-For: 203.0.113.9 (through a proxy)", get("/debug/pprof/cmdline", map[string]string{"X-Forwarded-For": "203.0.113.9"}), 403},
		{"GET /debug/pprof/cmdline with Forwarded: for=203.0.113.9", get("/debug/pprof/cmdline", map[string]string{"Forwarded": "for=203.0.113.9"}), 403},
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, c := range cases {
		status, head, err := exchange(client, p.URL, c.rq)
		if err != nil {
			r.judge(false, c.sent, "%s (want %d)", shortError(err), c.want)
			continue
		}
		r.judge(status == c.want, c.sent, "%d %s (want %d)", status, oneLine(head), c.want)
	}
	up, health := healthy(p)
	r.judge(up, "all of the above", "%s", health)
}

// writeFile writes a file for a server to read, ending the command when
// it cannot.
func writeFile(path, text string) {
	check(os.WriteFile(path, []byte(text), 0o600))
}
