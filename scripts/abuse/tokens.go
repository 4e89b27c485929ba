package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"ingest/internal/ingestexec"
)

// The tokens of the tokens section: dupTok is limited to checkout, payTok
// to payments-; cDup and newTok are listed twice in the files a server
// must refuse.
const (
	dupTok = "dup-tok"
	payTok = "pay-tok"
	cDup   = "c-dup"
	newTok = "new-tok"
)

// runTokens checks the tokens file as docs/contract.md describes it: a
// file listing a token twice is refused whole, at start (the server does
// not start) and on SIGHUP (the previous tokens stay), with an error
// naming the lines and never the token; a token limited to checkout
// cannot write payments-x (403) and, as every token, may read it.
func runTokens(r *runner) {
	r.tokensAtStart()
	r.tokensScopes()
}

// tokensAtStart starts a server with a file listing cDup twice. An older
// build that starts anyway is asked what the duplicated token may write:
// a lookup that merges the two entries' indexes finds a third entry.
func (r *runner) tokensAtStart() {
	file := filepath.Join(r.dir, "tokens-twice")
	writeFile(file, fmt.Sprintf("%s svc-x\n%s svc-y\n%s payments-\n", cDup, cDup, payTok))
	sent := fmt.Sprintf("start with --tokens listing %q on lines 1 (svc-x) and 2 (svc-y), %q on line 3", cDup, payTok)
	p, err := r.start(nil, "--tokens", file)
	if err != nil {
		msg := tokensError(err.Error())
		names := strings.Contains(msg, "line 1") && strings.Contains(msg, "line 2")
		r.judge(names && !strings.Contains(err.Error(), cDup), sent,
			"refused: %q (want the lines 1 and 2 named, the token not)", oneLine(msg))
		return
	}
	defer p.Kill()
	r.judge(false, sent, "the server started")
	status := r.write(p, cDup, "payments-x")
	r.judge(status != "202", fmt.Sprintf("POST service payments-x with %q (svc-x, svc-y) to that server", cDup), "%s (want 403)", status)
}

// tokensError is the line of the server's standard error about the tokens
// file, or its first lines.
func tokensError(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "tokens") {
			return strings.TrimSpace(line)
		}
	}
	return firstLines(stderr, 2)
}

// tokensScopes starts a server with dupTok (checkout) and payTok
// (payments-), checks what each may write and read, then lists newTok
// twice and sends SIGHUP: the server keeps the previous tokens.
func (r *runner) tokensScopes() {
	file := filepath.Join(r.dir, "tokens")
	writeFile(file, fmt.Sprintf("# checkout\n%s checkout\n%s payments-\n", dupTok, payTok))
	p := r.startOrFail("with --tokens: "+dupTok+" checkout, "+payTok+" payments-", "--tokens", file, "--log-level", "info")
	if p == nil {
		return
	}
	defer p.Kill()
	for _, c := range []struct{ token, service, want string }{
		{dupTok, "checkout-a", "202"},
		{dupTok, "payments-x", "403"},
		{payTok, "payments-x", "202"},
		{"", "checkout-a", "401"},
		{"unknown-tok", "checkout-a", "401"},
	} {
		status := r.write(p, c.token, c.service)
		r.judge(status == c.want, fmt.Sprintf("POST service %s with token %q", c.service, c.token), "%s (want %s)", status, c.want)
	}
	status := r.write(p, dupTok, "")
	r.judge(status == "403", fmt.Sprintf("POST /v1/logs?service=payments-x, events naming none, with %q", dupTok), "%s (want 403)", status)
	status = r.read(p, dupTok, "payments-x")
	r.judge(status == "200", fmt.Sprintf("GET /v1/logs?service=payments-x with %q", dupTok), "%s (want 200: every token may read)", status)

	writeFile(file, fmt.Sprintf("%s svc-x\n%s svc-y\n", newTok, newTok))
	sent := fmt.Sprintf("SIGHUP after listing %q twice (lines 1, 2) in place of the file", newTok)
	check(p.Cmd.Process.Signal(syscall.SIGHUP))
	logged := waitFor(p, regexp.MustCompile(`SIGHUP[^\n]*`), 10*time.Second)
	up, health := healthy(p)
	old, fresh := r.write(p, dupTok, "checkout-a"), r.write(p, newTok, "svc-x")
	names := strings.Contains(logged, "line 1") && strings.Contains(logged, "line 2") && !strings.Contains(logged, newTok)
	r.judge(up && old == "202" && fresh == "401" && names, sent,
		"%s; %q writes checkout-a: %s (want 202); %q writes svc-x: %s (want 401); logged %q (want the lines 1 and 2 named, the token not)", health, dupTok, old, newTok, fresh, oneLine(logged))
}

// write posts one event of service with token ("": none) and returns the
// status; an empty service posts to /v1/logs?service=payments-x an event
// naming none.
func (r *runner) write(p *ingestexec.Process, token, service string) string {
	rq := post("application/x-ndjson", "", fmt.Appendf(nil, `{"service":%q,"msg":"scoped?"}`+"\n", service))
	if service == "" {
		rq = post("application/x-ndjson", "", []byte(`{"msg":"scoped?"}`+"\n"))
		rq.path += "?service=payments-x"
	}
	if token != "" {
		rq.header["Authorization"] = "Bearer " + token
	}
	return send(&http.Client{Timeout: 30 * time.Second}, p.URL, rq)
}

// read queries the last hour of service with token and returns the
// status.
func (r *runner) read(p *ingestexec.Process, token, service string) string {
	rq := attackRequest{method: "GET", path: "/v1/logs?service=" + service, header: map[string]string{"Authorization": "Bearer " + token}}
	return send(&http.Client{Timeout: 30 * time.Second}, p.URL, rq)
}

// waitFor waits up to d for re to match the server's standard error and
// returns the last match ("" when none came).
func waitFor(p *ingestexec.Process, re *regexp.Regexp, d time.Duration) string {
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if m := re.FindAllString(p.Stderr(), -1); len(m) > 0 || time.Now().After(end) {
			if len(m) == 0 {
				return ""
			}
			return m[len(m)-1]
		}
	}
}
