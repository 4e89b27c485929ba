package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ingest/buffer"
	"ingest/logline"
	"ingest/logql"
)

// lokiStreams is Loki's streams answer, as a client decodes it.
type lokiStreams struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string           `json:"resultType"`
		Result     []lokiStreamJSON `json:"result"`
	} `json:"data"`
	Warnings []string `json:"warnings"`
}

// lokiStreamJSON is one entry of a streams answer.
type lokiStreamJSON struct {
	Stream map[string]string `json:"stream"`
	Values [][2]string       `json:"values"`
}

// lines lists the answer's lines in order, each "line@labels" with the
// labels as service/host/level.
func (a *lokiStreams) lines(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range a.Data.Result {
		for _, v := range r.Values {
			if len(v[0]) < 19 || strings.Trim(v[0], "0123456789") != "" {
				t.Fatalf("timestamp %q is not Unix nanoseconds", v[0])
			}
			out = append(out, v[1]+"@"+r.Stream["service"]+"/"+r.Stream["host"]+"/"+r.Stream["level"])
		}
	}
	return out
}

// lokiFixture is a server holding ten events of service lk, one second
// apart from 16:00:00 (m0..m9), hosts h0..h2 and levels cycling, plus one
// of service lk2 and one without a level or host.
func lokiFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := newFixture(t, cfg, buffer.Config{})
	levels := []string{"debug", "info", "warn", "error", "fatal"}
	var body []byte
	for i := range 10 {
		msg := fmt.Sprintf("m%d routine", i)
		if i%3 == 0 {
			msg = fmt.Sprintf("m%d disk full", i)
		}
		body = fmt.Appendf(body, `{"ts":"2026-11-21T16:00:%02dZ","service":"lk","host":"h%d","level":%q,"msg":%q,"code":%d}`+"\n", i, i%3, levels[i%5], msg, i)
	}
	body = fmt.Appendf(body, `{"ts":"2026-11-21T16:00:20Z","service":"lk2","host":"h0","level":"error","msg":"other service"}`+"\n")
	body = fmt.Appendf(body, `{"ts":"2026-11-21T16:00:30Z","service":"lk","msg":"bare \"quoted\"\nline"}`+"\n")
	hdr := map[string]string{"Content-Type": "application/x-ndjson"}
	if cfg.TokensFile != "" {
		hdr["Authorization"] = "Bearer tok"
	}
	if code, _, b := f.do(t, "POST", "/v1/logs", hdr, body); code != 202 {
		t.Fatalf("POST = %d %s", code, b)
	}
	path := "/v1/logs?service=lk,lk2&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, got := f.do(t, "GET", path, hdr, nil); strings.Count(got, "\n") == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("events not readable after 10s")
		}
	}
	return f
}

const lokiWindow = "&start=1795276800000000000&end=1795280400000000000" // 2026-11-21 16:00 to 17:00, ns

// TestLokiQueryRange: each matcher and line filter of a log query selects
// what it means, in the direction and up to the limit asked, in Loki's
// streams form, labels and nanosecond times included.
func TestLokiQueryRange(t *testing.T) {
	f := lokiFixture(t, Config{})
	for _, c := range []struct {
		query, params string
		want          string // "m<i>" of the lines in order; "x" for the bare line; "o" for lk2's
	}{
		{`{service="lk"}`, "&limit=3", "x m9 m8"},
		{`{service="lk"}`, "&limit=3&direction=forward", "m0 m1 m2"},
		{`{service="lk", level="error"}`, "", "m8 m3"},
		{`{service="lk", level=~"warn|error"}`, "&direction=FORWARD", "m2 m3 m7 m8"},
		{`{service="lk", level!~"debug|info|warn"}`, "", "x m9 m8 m4 m3"}, // no level is the empty value,
		{`{service="lk", level=""}`, "", "x"},
		{`{service="lk", level=~"nothing"}`, "", ""},
		{`{service="lk", host="h1"}`, "", "m7 m4 m1"},
		{`{service="lk", host=~"h[12]", host!="h2"}`, "", "m7 m4 m1"},
		{`{service="lk", host!~"h.*"}`, "", "x"},
		{`{service=~"lk.*", level="error"}`, "", "o m8 m3"},
		{`{service!="lk", service=~"l.*"}`, "", "o"},
		{`{service="lk", service!="lk"}`, "", ""},
		{`{service="nosuch"}`, "", ""},
		{`{level="error"}`, "", "o m8 m3"},
		{`{service="lk"} |= "disk"`, "", "m9 m6 m3 m0"},
		{`{service="lk"} != "disk" != "routine"`, "", "x"},
		{`{service="lk"} |~ "m[0-4] (disk|rout)"`, "&direction=forward", "m0 m1 m2 m3 m4"},
		{`{service="lk"} |= "disk" !~ "m[69]"`, "", "m3 m0"},
		{`{service="lk"} |= "\"quoted\"\n"`, "", "x"},
		{`{service="lk", host="h0"} | json | logfmt | drop __error__, __error_details__`, "", "m9 m6 m3 m0"},
		{`{}`, "&limit=2", "x o"},
	} {
		t.Run(c.query+c.params, func(t *testing.T) {
			code, hdr, body := f.do(t, "GET", "/loki/api/v1/query_range?query="+url.QueryEscape(c.query)+lokiWindow+c.params, nil, nil)
			var a lokiStreams
			if err := json.Unmarshal([]byte(body), &a); err != nil || code != 200 || a.Status != "success" || a.Data.ResultType != "streams" ||
				hdr.Get("Content-Type") != "application/json" || len(a.Warnings) > 0 {
				t.Fatalf("= %d %s (%v)", code, body, err)
			}
			var got []string
			for _, l := range a.lines(t) {
				switch {
				case strings.HasPrefix(l, "bare"):
					got = append(got, "x")
				case strings.HasPrefix(l, "other"):
					got = append(got, "o")
				default:
					got = append(got, l[:2])
				}
			}
			if strings.Join(got, " ") != c.want {
				t.Fatalf("lines %v, want %s\n%s", got, c.want, body)
			}
		})
	}
	// Labels, values and times, exactly.
	_, _, body := f.do(t, "GET", "/loki/api/v1/query_range?query="+url.QueryEscape(`{service="lk"} |= "m3 "`)+lokiWindow, nil, nil)
	want := `{"status":"success","data":{"resultType":"streams","result":[{"stream":{"host":"h0","level":"error","service":"lk"},"values":[["1795276803000000000","m3 disk full"]]}],"stats":{"summary":{"execTime":`
	if !strings.HasPrefix(body, want) {
		t.Fatalf("answer\n%s\nwant it to start\n%s", body, want)
	}
	// Consecutive events of one label set share an entry.
	var a lokiStreams
	_, _, body = f.do(t, "GET", "/loki/api/v1/query_range?query="+url.QueryEscape(`{service="lk", host="h0", level=~"debug|error"}`)+lokiWindow+"&direction=forward", nil, nil)
	if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Data.Result) != 2 || len(a.Data.Result[0].Values) != 1 || len(a.Data.Result[1].Values) != 1 {
		t.Fatalf("%s (%v)", body, err)
	}
}

// TestLokiParams: the time forms Loki takes, and a 400 naming the problem
// (or the supported subset) for everything else.
func TestLokiParams(t *testing.T) {
	f := lokiFixture(t, Config{})
	q := "/loki/api/v1/query_range?query=" + url.QueryEscape(`{service="lk"} |= "m5"`)
	for _, rng := range []string{
		"&start=1795276800&end=1795280400",                            // seconds
		"&start=1795276800.5&end=1795280400.25",                       // seconds with a fraction
		"&start=2026-11-21T16:00:00Z&end=2026-11-21T18:00:00%2B01:00", // RFC 3339
		"&start=0&end=9999999999&direction=forward",                   // the end clamped to what can be stored
	} {
		var a lokiStreams
		code, _, body := f.do(t, "GET", q+rng, nil, nil)
		if err := json.Unmarshal([]byte(body), &a); err != nil || code != 200 || len(a.lines(t)) != 1 {
			t.Errorf("range %s = %d %s", rng, code, body)
		}
	}
	for _, c := range []struct{ params, why string }{
		{"?query=" + url.QueryEscape(`{app="x"}`), logql.Supported},
		{"?query=" + url.QueryEscape(`rate({service="lk"}[1m])`), "supported"},
		{"?query=" + url.QueryEscape(`{service="lk"}`) + "&limit=5001", "at most 5000 lines"},
		{"?query=" + url.QueryEscape(`{service="lk"}`) + "&limit=0", "bad limit"},
		{"?query=" + url.QueryEscape(`{service="lk"}`) + "&direction=up", "bad direction"},
		{"?query=" + url.QueryEscape(`{service="lk"}`) + "&start=1795280400&end=1795276800", "before start"},
		{"?query=" + url.QueryEscape(`{service="lk"}`) + "&start=soon", "bad start"},
		{"?query=" + url.QueryEscape(`{service="lk"}`) + "&start=1e999.0", "bad start"},
		{"?query=" + url.QueryEscape(`sum by (level) (count_over_time({service="lk"}[1m]))`) + "&start=1795276800&end=1795287800&step=1", "11001 points per series: at most 11000"},
		{"?query=" + url.QueryEscape(`sum by (level) (count_over_time({service="lk"}[1m]))`) + "&step=0", "bad step"},
		{"?query=" + url.QueryEscape(`sum by (level) (count_over_time({service="lk"}[1m]))`) + "&step=32d", "at most 744h"},
		{"?query=" + url.QueryEscape(`sum by (level) (count_over_time({service="lk"}[40d]))`), "at most 744h"},
		{"?query=" + url.QueryEscape(`sum by (level) (count_over_time({service="lk"}[30d]))`) + "&start=1795276800&end=1795280400&step=7s", "intervals of 1s"},
	} {
		code, _, body := f.do(t, "GET", "/loki/api/v1/query_range"+c.params, nil, nil)
		var e struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 || e.Code != 400 || e.Status != "error" || !strings.Contains(e.Message, c.why) {
			t.Errorf("%s = %d %s, want a 400 saying %q", c.params, code, body, c.why)
		}
	}
	if code, _, body := f.do(t, "GET", "/loki/api/v1/query_range?query="+url.QueryEscape(`sum(count_over_time({service="lk"}[1m]))`)+"&start=1795276800&end=1795287799&step=1", nil, nil); code != 200 {
		t.Errorf("11000 points = %d %s", code, body)
	}
	if code, _, body := f.do(t, "GET", "/loki/api/v1/query?query="+url.QueryEscape(`{service="lk"}`), nil, nil); code != 400 || !strings.Contains(body, "query_range") {
		t.Errorf("instant log query = %d %s", code, body)
	}
	if code, _, _ := f.do(t, "POST", q, nil, nil); code != 405 {
		t.Errorf("POST query_range = %d, want 405", code)
	}
}

// lokiMatrix is Loki's matrix or vector answer.
type lokiMatrix struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// points lists the series as "level:t=v,t=v" with times in seconds after
// 16:00, sorted by level.
func (m *lokiMatrix) points() []string {
	var out []string
	for _, r := range m.Data.Result {
		s := r.Metric["level"] + ":"
		vals := r.Values
		if m.Data.ResultType == "vector" {
			vals = [][2]any{r.Value}
		}
		for i, v := range vals {
			if i > 0 {
				s += ","
			}
			s += strconv.FormatFloat(v[0].(float64)-1795276800, 'f', -1, 64) + fmt.Sprintf("=%v", v[1])
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestLokiVolume: the log volume query Grafana sends, by level and in
// total, as a matrix of exact counts per window, and as an instant vector;
// and the health check's constant.
func TestLokiVolume(t *testing.T) {
	f := lokiFixture(t, Config{})
	get := func(path string) lokiMatrix {
		t.Helper()
		code, _, body := f.do(t, "GET", path, nil, nil)
		var m lokiMatrix
		if err := json.Unmarshal([]byte(body), &m); err != nil || code != 200 || m.Status != "success" {
			t.Fatalf("GET %s = %d %s (%v)", path, code, body, err)
		}
		return m
	}
	// Grafana 11's volume query, windows of 5 s every 5 s from 16:00:00:
	// m0..m4 in [0,5), m5..m9 in [5,10), the bare line at 30 s.
	m := get("/loki/api/v1/query_range?query=" + url.QueryEscape(`sum by (level, detected_level) (count_over_time({service="lk"} | drop __error__[5s]))`) +
		"&start=1795276800000000000&end=1795276860000000000&step=5000ms")
	want := []string{":35=1", "debug:5=1,10=1", "error:5=1,10=1", "fatal:5=1,10=1", "info:5=1,10=1", "warn:5=1,10=1"}
	if m.Data.ResultType != "matrix" || !slices.Equal(m.points(), want) {
		t.Fatalf("by level: %v, want %v", m.points(), want)
	}
	// Grafana 10's form, a range longer than the step (sliding windows of
	// 10 s every 5 s), a filter, and no grouping: one series.
	m = get("/loki/api/v1/query_range?query=" + url.QueryEscape(`sum(count_over_time({service="lk"} |= "disk" [10s]))`) +
		"&start=1795276800&end=1795276820&step=5")
	if want := []string{":5=2,10=4,15=2"}; !slices.Equal(m.points(), want) {
		t.Fatalf("total: %v, want %v", m.points(), want)
	}
	// Instant: the events of [t - 10s, t).
	m = get("/loki/api/v1/query?query=" + url.QueryEscape(`sum by (level) (count_over_time({service=~"lk.*"}[10s]))`) + "&time=1795276810")
	if want := []string{"debug:10=2", "error:10=2", "fatal:10=2", "info:10=2", "warn:10=2"}; m.Data.ResultType != "vector" || !slices.Equal(m.points(), want) {
		t.Fatalf("instant: %v, want %v", m.points(), want)
	}
	// The data source's health check (Grafana 11: an instant query at
	// Unix 4 s, sent as "4000000000", 10 digits: seconds, as Loki reads it).
	m = get("/loki/api/v1/query?query=" + url.QueryEscape("vector(1)+vector(1)") + "&time=4000000000")
	if m.Data.ResultType != "vector" || len(m.Data.Result) != 1 || m.Data.Result[0].Value[1] != "2" || m.Data.Result[0].Value[0] != float64(4e9) {
		t.Fatalf("health check: %+v", m)
	}
	m = get("/loki/api/v1/query_range?query=" + url.QueryEscape("vector(3)") + "&start=10&end=20&step=5")
	if want := []string{":-1795276790=3,-1795276785=3,-1795276780=3"}; !slices.Equal(m.points(), want) {
		t.Fatalf("constant range: %v", m.points())
	}
}

// TestLokiLabels: the label browser's calls, the series of a selector,
// the index estimate, and the harmless answers.
func TestLokiLabels(t *testing.T) {
	f := lokiFixture(t, Config{})
	get := func(path string) string {
		t.Helper()
		code, _, body := f.do(t, "GET", path, nil, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d %s", path, code, body)
		}
		return strings.TrimSpace(body)
	}
	for path, want := range map[string]string{
		"/loki/api/v1/labels?start=1795276800000000000&end=1795280400000000000":                                      `{"status":"success","data":["host","level","service"]}`,
		"/loki/api/v1/label/service/values":                                                                          `{"status":"success","data":["lk","lk2"]}`,
		"/loki/api/v1/label/service/values?query=" + url.QueryEscape(`{service=~".*2"}`):                             `{"status":"success","data":["lk2"]}`,
		"/loki/api/v1/label/service/values?query=" + url.QueryEscape(`{service="nosuch"}`):                           `{"status":"success","data":[]}`,
		"/loki/api/v1/label/host/values?" + lokiWindow[1:]:                                                           `{"status":"success","data":["h0","h1","h2"]}`,
		"/loki/api/v1/label/level/values?query=" + url.QueryEscape(`{host="h1"}`) + lokiWindow:                       `{"status":"success","data":["fatal","info","warn"]}`,
		"/loki/api/v1/label/nosuch/values":                                                                           `{"status":"success","data":[]}`,
		"/loki/api/v1/series?match[]=" + url.QueryEscape(`{service="lk", host="h2", level=~"d.*|w.*"}`) + lokiWindow: `{"status":"success","data":[{"host":"h2","level":"debug","service":"lk"},{"host":"h2","level":"warn","service":"lk"}]}`,
		"/loki/api/v1/index/stats?query=" + url.QueryEscape(`{service=~"lk.*"}`) + lokiWindow:                        "",
		"/loki/api/v1/detected_fields?query=" + url.QueryEscape(`{service="lk"}`):                                    `{"fields":[],"limit":1000}`,
		"/loki/api/v1/patterns?query=" + url.QueryEscape(`{service="lk"}`):                                           `{"status":"success","data":[]}`,
		"/loki/api/v1/index/volume?query=" + url.QueryEscape(`{service="lk"}`):                                       `{"status":"success","data":{"resultType":"vector","result":[]}}`,
	} {
		got := get(path)
		if path == "/loki/api/v1/index/stats?query="+url.QueryEscape(`{service=~"lk.*"}`)+lokiWindow {
			var st struct{ Streams, Chunks, Bytes, Entries int }
			if err := json.Unmarshal([]byte(got), &st); err != nil || st.Streams != 2 || st.Chunks != 2 || st.Bytes == 0 || st.Entries != 12 {
				t.Errorf("index/stats = %s (%v)", got, err)
			}
			continue
		}
		if got != want {
			t.Errorf("GET %s\n = %s\nwant %s", path, got, want)
		}
	}
	if got := get("/loki/api/v1/status/buildinfo"); !strings.Contains(got, `"version":"ingest-`) || !strings.Contains(got, `"goVersion":"go`) {
		t.Errorf("buildinfo = %s", got)
	}
	if code, _, body := f.do(t, "GET", "/loki/api/v1/label/service/values?query="+url.QueryEscape("sum(count_over_time({}[1m]))"), nil, nil); code != 400 {
		t.Errorf("values of a metric query = %d %s", code, body)
	}
	if code, _, _ := f.do(t, "GET", "/loki/api/v1/detected_labels", nil, nil); code != 404 {
		t.Errorf("detected_labels = %d, want 404 (Grafana then uses /labels)", code)
	}
}

// TestLokiNeedsToken: with --tokens, every /loki/ read route wants a
// token, as /v1/ does, and takes a bearer one.
func TestLokiNeedsToken(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := lokiFixture(t, Config{TokensFile: tokens})
	for _, path := range []string{"/loki/api/v1/query_range?query=" + url.QueryEscape(`{service="lk"}`) + lokiWindow,
		"/loki/api/v1/query?query=vector(1)", "/loki/api/v1/labels", "/loki/api/v1/label/service/values", "/loki/api/v1/series",
		"/loki/api/v1/index/stats", "/loki/api/v1/tail?query={}", "/loki/api/v1/status/buildinfo", "/loki/api/v1/nosuch"} {
		if code, _, body := f.do(t, "GET", path, nil, nil); code != 401 {
			t.Errorf("GET %s without a token = %d %s", path, code, body)
		}
	}
	code, _, body := f.do(t, "GET", "/loki/api/v1/query_range?query="+url.QueryEscape(`{service="lk"}`)+lokiWindow, map[string]string{"Authorization": "Bearer tok"}, nil)
	if code != 200 || !strings.Contains(body, "m8 routine") {
		t.Fatalf("with the token = %d %s", code, body)
	}
}

// lokiBenchEvent is an event of the size the query benchmarks use.
var lokiBenchEvent = logline.Event{Time: 1795276800123456700, Level: logline.LevelWarn, Service: []byte("api"), Host: []byte("web-17"),
	Message: []byte("GET /api/v1/orders/123456 completed with status 200 for user u-000042 in 12 ms via edge-0")}

// TestLokiEncodeAllocsPerEvent: encoding an event into a streams answer
// allocates nothing once the buffers have grown, whether it opens an
// entry or joins one.
func TestLokiEncodeAllocsPerEvent(t *testing.T) {
	var en streamsEncoder
	buf := make([]byte, 0, 4096)
	other := lokiBenchEvent
	other.Host = []byte("web-18")
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		e := &lokiBenchEvent
		if i++; i%3 == 0 {
			e = &other // a new entry every third event
		}
		buf = en.add(buf[:0], e)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per event, want 0", allocs)
	}
}

// BenchmarkLokiEncode: the per-event cost of the streams answer (the
// engine's own cost is BenchmarkScan's).
func BenchmarkLokiEncode(b *testing.B) {
	var en streamsEncoder
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(lokiBenchEvent.Message)))
	for b.Loop() {
		buf = en.add(buf[:0], &lokiBenchEvent)
	}
}
