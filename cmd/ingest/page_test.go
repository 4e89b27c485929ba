package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium (scripts/test.sh installs it). Under
// CI=true a missing browser fails the test instead of skipping it.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (scripts/test.sh installs Debian's chromium package)")
	}
	t.Skip("chromium is not installed; scripts/test.sh installs it")
	return ""
}

// headless starts the browser for one test, with the flags this machine's
// closed network needs, and ends it when the test ends (90 s at most). Its
// profile directory is removed only after the browser has exited: Chromium's
// helper processes may still write there for a moment after the browser is
// told to stop, which made t.TempDir's own cleanup fail now and then.
func headless(t *testing.T, browser string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "ingest-page-test-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	actx, cancelA := chromedp.NewExecAllocator(ctx, append(opts, extra...)...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelB()
		cancelA() // waits for the browser process to exit
		cancel()
		var err error
		for range 50 {
			if err = os.RemoveAll(profile); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("cannot remove the browser profile %s: %v", profile, err)
	})
	return bctx
}

// TestQueryPage drives the query page in headless Chromium against the real
// binary, as a person would: open a link with service, range and level, see
// the stored events and the histogram, expand a row, switch live on and see
// an event posted afterwards appear.
//
// INGEST_PAGE_SCREENSHOT=FILE also writes a screenshot of the page with its
// data (docs/query-page.png is made that way).
func TestQueryPage(t *testing.T) {
	browser := chromium(t)
	s := start(t, t.TempDir())

	// 16:00-16:30 on one day: api events at a rate that varies by minute,
	// cycling through the levels, and web events that a service=api link
	// must not show.
	levels := []string{"debug", "info", "info", "info", "warn", "info", "error", "info", "info", "warn", "fatal", "info", "info"}
	msgs := map[string]string{"debug": "pool size %d", "info": "GET /api/orders/%d 200", "warn": "slow query on orders (%d ms)",
		"error": "payment failed for order %d", "fatal": "out of memory after %d allocations"}
	var body []byte
	want := map[string]int{}
	firstWarn := ""
	n := 0
	for m := range 30 {
		perMin := 4 + (m*7)%13
		for k := range perMin {
			lv := levels[n%len(levels)]
			ts := fmt.Sprintf("2026-11-21T16:%02d:%02dZ", m, k*60/perMin)
			msg := fmt.Sprintf(msgs[lv], 1000+n)
			body = fmt.Appendf(body, `{"ts":%q,"service":"api","host":"web-%d","level":%q,"msg":%q,"order":%d,"region":"eu-west"}`+"\n",
				ts, n%3+1, lv, msg, 1000+n)
			if firstWarn == "" && lv == "warn" {
				firstWarn = msg
			}
			want[lv]++
			body = fmt.Appendf(body, `{"ts":%q,"service":"web","level":"error","msg":"web error %d"}`+"\n", ts, n)
			n++
		}
	}
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", body); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	s.waitDrained()
	wantRows := want["warn"] + want["error"] + want["fatal"]

	bctx := headless(t, browser, chromedp.WindowSize(1280, 860))

	link := s.url + "/?service=api&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z&level=warn"
	var status, legend, firstRow, detail, service, level string
	var loaded []string
	var bars bool
	poll := func(expr string, res any) chromedp.Action {
		return chromedp.Poll(expr, res, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
	}
	err := chromedp.Run(bctx,
		chromedp.Navigate(link),
		// One evaluation reads the status, the legend and the first row
		// together, so they cannot come from two different renders.
		poll(`(() => {
			const status = document.getElementById('status').textContent;
			const legend = document.getElementById('legend').textContent;
			const row = document.querySelector('#rows .row');
			return /events? in /.test(status) && legend !== '' && row ? [status, legend, row.textContent] : null;
		})()`, &loaded),
		chromedp.Value("#service", &service, chromedp.ByQuery),
		chromedp.Value("#level", &level, chromedp.ByQuery),
		// The histogram has bars: some canvas pixels are painted.
		chromedp.Evaluate(`(() => { const c = document.getElementById('histo'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true; return false; })()`, &bars),
	)
	if err != nil {
		var text string
		chromedp.Run(bctx, chromedp.Evaluate(`document.body.innerText.slice(0, 2000)`, &text))
		t.Fatalf("loading %s: %v (status %q); page text:\n%s", link, err, status, text)
	}
	status, legend, firstRow = loaded[0], loaded[1], loaded[2]
	if service != "api" || level != "warn" {
		t.Fatalf("the link's state did not reach the controls: service %q level %q", service, level)
	}
	if !strings.HasPrefix(status, fmt.Sprintf("%d events in", wantRows)) {
		t.Fatalf("status %q, want %d events (api, warn and above)", status, wantRows)
	}
	for _, l := range []string{"warn", "error", "fatal"} {
		if !strings.Contains(legend, fmt.Sprintf("%s %d", l, want[l])) {
			t.Fatalf("histogram legend %q lacks %s %d", legend, l, want[l])
		}
	}
	if strings.Contains(legend, "info") || !bars {
		t.Fatalf("histogram legend %q (bars painted: %v): want warn and above only, drawn", legend, bars)
	}
	if !strings.Contains(firstRow, "2026-11-21 16:0") || !strings.Contains(firstRow, firstWarn) {
		t.Fatalf("first row %q, want the first warning (%s)", firstRow, firstWarn)
	}

	// Expand the first row: its attributes show.
	err = chromedp.Run(bctx,
		chromedp.Click("#rows .row", chromedp.ByQuery),
		chromedp.WaitVisible("#rows .detail", chromedp.ByQuery),
		chromedp.Text("#rows .detail", &detail, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("expanding a row: %v", err)
	}
	for _, kv := range []string{"order", "1004", "region", "eu-west", "host", "web-2", "service", "api"} {
		if !strings.Contains(detail, kv) {
			t.Fatalf("expanded row %q lacks %q", detail, kv)
		}
	}

	if shot := os.Getenv("INGEST_PAGE_SCREENSHOT"); shot != "" {
		var png []byte
		if err := chromedp.Run(bctx, chromedp.CaptureScreenshot(&png)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", filepath.Base(shot), len(png))
	}

	// Live: scroll to the end, switch live on, post an event; it appears.
	var url string
	err = chromedp.Run(bctx,
		chromedp.Evaluate(`document.getElementById('results').scrollTop = 1e9`, nil),
		chromedp.Click("#live", chromedp.ByQuery),
		poll(`document.querySelector('.live.on') !== null && / live$/.test(document.getElementById('status').textContent)`, nil),
		chromedp.Evaluate(`location.search`, &url),
	)
	if err != nil {
		t.Fatalf("switching live on: %v", err)
	}
	if !strings.Contains(url, "live=1") || !strings.Contains(url, "level=warn") {
		t.Fatalf("URL query %q does not hold the live switch and the level", url)
	}
	waitTailReaders(t, s, 1)
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", []byte(
		`{"service":"api","level":"info","msg":"below the level"}`+"\n"+
			`{"service":"api","level":"error","msg":"live: card declined","order":77}`)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	var liveRow string
	err = chromedp.Run(bctx,
		poll(`[...document.querySelectorAll('#rows .row')].some(r => r.textContent.includes('live: card declined'))`, nil),
		chromedp.Text("#status", &status, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('#rows .row')].map(r => r.textContent).join('\n')`, &liveRow),
	)
	if err != nil {
		t.Fatalf("the live event did not appear: %v (status %q)", err, status)
	}
	if strings.Contains(liveRow, "below the level") || !strings.HasPrefix(status, fmt.Sprintf("%d events", wantRows+1)) {
		t.Fatalf("after the live event: status %q, rows:\n%s", status, liveRow)
	}
}

// TestQueryPageAsksForToken: with --tokens the page asks for a token on the
// API's 401, then sends it as a bearer header and shows the events.
func TestQueryPageAsksForToken(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("s3cret-page-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, filepath.Join(dir, "data"), "--tokens", tokens)
	req, _ := http.NewRequest("POST", s.url+"/v1/logs", strings.NewReader(
		`{"ts":"2026-11-21T16:00:01Z","service":"api","level":"error","msg":"behind a token"}`))
	req.Header.Set("Authorization", "Bearer s3cret-page-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("POST with the token: %v %v", resp, err)
	}
	resp.Body.Close()
	s.waitDrained()

	bctx := headless(t, browser)
	// The status and the first row are read in one evaluation: reading
	// them in two steps could catch the row list between two renders.
	var got []string
	err = chromedp.Run(bctx,
		chromedp.Navigate(s.url+"/?service=api&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z"),
		chromedp.WaitVisible("#auth", chromedp.ByQuery),
		chromedp.SendKeys("#token", "s3cret-page-token", chromedp.ByQuery),
		chromedp.Click(`#auth-form button[value=ok]`, chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const status = document.getElementById('status').textContent;
			const row = document.querySelector('#rows .row');
			return /events? in /.test(status) && row ? [status, row.textContent] : null;
		})()`, &got, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)),
	)
	if err != nil || len(got) != 2 {
		t.Fatalf("page with a token: %v (got %q)", err, got)
	}
	status, row := got[0], got[1]
	if !strings.HasPrefix(status, "1 event in") || !strings.Contains(row, "behind a token") {
		t.Fatalf("status %q, row %q: want the one event", status, row)
	}
}

// waitTailReaders waits until the server counts n tail readers.
func waitTailReaders(t *testing.T, s *server, n int) {
	t.Helper()
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^ingest_tail_readers %d$`, n))
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if re.Match(b) {
			return
		}
	}
	t.Fatalf("the server never counted %d tail readers", n)
}

// TestPageCannotBeFramed: in Chromium, a frame showing the query page (here
// inside the page itself, the most lenient case: same origin) stays empty,
// so no other site can overlay it to trick clicks.
func TestPageCannotBeFramed(t *testing.T) {
	browser := chromium(t)
	s := start(t, t.TempDir())
	resp, err := http.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET / answers Content-Security-Policy %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}
	bctx := headless(t, browser)
	var framed string
	err = chromedp.Run(bctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitReady("#status", chromedp.ByID),
		chromedp.Evaluate(`(() => {
			const f = document.createElement('iframe');
			f.onload = () => setTimeout(() => {
				let d = null;
				try { d = f.contentDocument; } catch (e) {}
				window.framed = d && d.getElementById('status') ? 'shown' : 'blocked';
			}, 200);
			f.src = '/?service=api';
			document.body.appendChild(f);
		})()`, nil),
		chromedp.Poll(`window.framed || null`, &framed, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if framed != "blocked" {
		t.Fatalf("the page in a frame was %s, want blocked", framed)
	}
}

// TestQueryPageListsEveryEvent: events whose own fields are named like the
// answer's control lines (error, stats, dropped, marker, even @ingest) are
// listed like any other, in a search and live, and nothing is shown as an
// error; the page used to end the list at an event with an "error" field
// and show its text as the status. The link over every year since 1700
// (its histogram is 17,000 weekly buckets) used to make the server exit.
func TestQueryPageListsEveryEvent(t *testing.T) {
	browser := chromium(t)
	s := start(t, t.TempDir())
	body := `{"ts":"2026-11-21T16:00:01Z","service":"api","level":"error","msg":"first","error":"connection refused"}
{"ts":"2026-11-21T16:00:02Z","service":"api","level":"info","msg":"second","stats":{"n":1}}
{"ts":"2026-11-21T16:00:03Z","service":"api","level":"info","msg":"third","dropped":3,"marker":"not a marker"}
{"ts":"2026-11-21T16:00:04Z","service":"api","level":"info","msg":"fourth","@ingest":"error"}
{"ts":"2026-11-21T16:00:05Z","service":"api","level":"info","msg":"fifth"}
{"ts":"2026-11-21T16:00:06Z","service":"api","level":"warn","msg":"sixth"}
`
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", []byte(body)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	s.waitDrained()
	bctx := headless(t, browser, chromedp.WindowSize(1280, 860))
	poll := func(expr string, res any) chromedp.Action {
		return chromedp.Poll(expr, res, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
	}
	// status, whether it is shown as an error, and the rows' messages.
	const view = `(() => {
		const st = document.getElementById('status');
		const rows = [...document.querySelectorAll('#rows .row')].map(r => r.querySelector('.msg').textContent);
		return /events? in |live$/.test(st.textContent) ? [st.textContent, String(st.classList.contains('err')), rows.join(',')] : null;
	})()`
	var got []string
	link := s.url + "/?service=api&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z"
	if err := chromedp.Run(bctx, chromedp.Navigate(link), poll(view, &got)); err != nil {
		t.Fatalf("loading %s: %v", link, err)
	}
	want := "first,second,third,fourth,fifth,sixth"
	if !strings.HasPrefix(got[0], "6 events in") || got[1] != "false" || got[2] != want {
		t.Fatalf("status %q (error shown: %s), rows %q; want 6 events, no error, rows %s", got[0], got[1], got[2], want)
	}

	// Live: such an event arrives as an event, not as a dropped marker.
	err := chromedp.Run(bctx,
		chromedp.Evaluate(`document.getElementById('results').scrollTop = 1e9`, nil),
		chromedp.Click("#live", chromedp.ByQuery),
		poll(`document.querySelector('.live.on') !== null && / live$/.test(document.getElementById('status').textContent)`, nil),
	)
	if err != nil {
		t.Fatalf("switching live on: %v", err)
	}
	waitTailReaders(t, s, 1)
	if code, b := s.post("/v1/logs", "application/x-ndjson", "", []byte(
		`{"service":"api","level":"info","msg":"live one","dropped":5,"error":"x","@ingest":"dropped"}`+"\n"+
			`{"service":"api","level":"info","msg":"live two"}`)); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	if err := chromedp.Run(bctx, poll(`(() => { const v = `+view+`; return v && v[2].endsWith('live two') ? v : null; })()`, &got)); err != nil {
		t.Fatalf("the live events did not appear: %v", err)
	}
	if got[1] != "false" || got[2] != want+",live one,live two" || strings.Contains(got[2], "dropped") {
		t.Fatalf("live: status %q (error shown: %s), rows %q", got[0], got[1], got[2])
	}

	// Every year since 1700: the page shows the events; the server lives.
	s.waitDrained()
	link = s.url + "/?service=*&from=1700-01-01T00:00:00Z&to=now"
	if err := chromedp.Run(bctx, chromedp.Navigate(link), poll(view, &got)); err != nil {
		t.Fatalf("loading %s: %v", link, err)
	}
	if !strings.HasPrefix(got[0], "8 events in") || got[1] != "false" {
		t.Fatalf("%s: status %q (error shown: %s)", link, got[0], got[1])
	}
	if resp, err := http.Get(s.url + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the server does not answer after the page's reads: %v", err)
	}
}
