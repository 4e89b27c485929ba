package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"ingest/blobsink"
	"ingest/internal/azurite"
	"ingest/internal/ingestexec"
	"ingest/logline"
	"ingest/query"
	"ingest/storage"
)

// binary is the ingest executable built once for every test here.
var binary string

// testBinaryEnv names the ingest executable for a test process started
// by another one, instead of building it again.
const testBinaryEnv = "INGEST_TEST_BINARY"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ingest-bin-")
	if err != nil {
		panic(err)
	}
	// A test run again in another process (inUserNamespace) takes the
	// binary its parent built.
	if binary = os.Getenv(testBinaryEnv); binary == "" {
		if binary, err = ingestexec.Build(dir, false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := azurite.RunMain(m)
	pausable.az.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running ingest process.
type server struct {
	*ingestexec.Process
	t       *testing.T
	url     string
	dataDir string
	token   string // sent as a bearer token by the test's reads, when set
}

// start runs `ingest serve` on a free loopback port and waits until healthy.
func start(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	return startBinary(t, binary, 0, dataDir, args...)
}

// startBinary runs bin's `ingest serve` on port (0: a free one); the
// process is killed at the end of the test if still running, and its log
// shown when the test failed.
func startBinary(t *testing.T, bin string, port int, dataDir string, args ...string) *server {
	t.Helper()
	p, err := ingestexec.Serve(bin, port, nil, append([]string{"--data-dir", dataDir}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("server log:\n%s", p.Stderr())
		}
	})
	return &server{Process: p, t: t, url: p.URL, dataDir: dataDir}
}

// stop sends SIGTERM and returns the exit code.
func (s *server) stop() int {
	s.t.Helper()
	code, err := s.Stop(60 * time.Second)
	if err != nil {
		s.t.Fatalf("%v:\n%s", err, s.Stderr())
	}
	return code
}

// freePort is a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := ingestexec.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// lockedBuffer is a standard error shared between a process and a test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// run runs an ingest subcommand with the clean environment and returns its
// combined output.
func run(args ...string) ([]byte, error) {
	return ingestexec.Command(binary, args...).CombinedOutput()
}

// getLines GETs path until the answer has want lines (events become
// readable once flushed), for at most 10 s, and returns the last answer.
func (s *server) getLines(path string, want int) string {
	s.t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.url + path)
		if err != nil {
			s.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got = string(b); strings.Count(got, "\n") == want {
			break
		}
	}
	return got
}

// waitDrained waits until the server has stored everything it accepted
// (the ingest_buffer_bytes gauge reads 0).
func (s *server) waitDrained() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			s.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if regexp.MustCompile(`(?m)^ingest_buffer_bytes 0$`).Match(b) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatal("the buffer did not drain within 30s")
}

func (s *server) kill9() { s.Kill() }

func (s *server) post(path, contentType, encoding string, body []byte) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// events builds an NDJSON batch with ids prefix-0..n-1 in the 16:00 hour.
func events(service, host, prefix string, n int) []byte {
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, `{"ts":"2026-11-21T16:%02d:%02d.%03dZ","service":%q,"host":%q,"id":"%s-%d","level":"info","msg":"event %d of %s; \"quoted\"","n":%d}`+"\n",
			i/60%60, i%60, i%1000, service, host, prefix, i, i, prefix, i)
	}
	return b
}

// readIDs reads every event of the prefix's blobs: id -> count, and the
// hosts seen per blob.
func readIDs(t *testing.T, store blobsink.Store, prefix string) (ids map[string]int, hostsPerBlob map[string]map[string]bool) {
	t.Helper()
	ids = map[string]int{}
	hostsPerBlob = map[string]map[string]bool{}
	var names []string
	if err := store.List(context.Background(), prefix, func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		rc, err := query.OpenBlob(context.Background(), store, name)
		if err != nil {
			t.Fatal(err)
		}
		hostsPerBlob[name] = map[string]bool{}
		sc := bufio.NewScanner(rc)
		sc.Buffer(nil, 8<<20)
		var e logline.Event
		for sc.Scan() {
			if err := logline.Parse(sc.Bytes(), &e); err != nil {
				t.Fatalf("blob %s holds a line that does not parse (interleaved or torn?): %v\n%q", name, err, sc.Bytes())
			}
			ids[string(e.ID)]++
			hostsPerBlob[name][string(e.Host)] = true
		}
		rc.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return ids, hostsPerBlob
}

// checkExactlyOnce fails unless every acknowledged id is stored once and no
// id is stored twice.
func checkExactlyOnce(t *testing.T, acked []string, stored map[string]int) {
	t.Helper()
	lost, dup := 0, 0
	for _, id := range acked {
		if stored[id] == 0 {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged event %s is not in any blob", id)
			}
		}
	}
	for id, n := range stored {
		if n > 1 {
			dup++
			if dup <= 5 {
				t.Errorf("event %s is stored %d times", id, n)
			}
		}
	}
	if lost > 0 || dup > 0 {
		t.Fatalf("%d acknowledged events lost, %d duplicated (of %d acknowledged, %d stored)", lost, dup, len(acked), len(stored))
	}
	t.Logf("%d acknowledged events, %d stored, 0 lost, 0 duplicated", len(acked), len(stored))
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestServeEndToEnd is the README's walk-through on the embedded default.
func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := start(t, dir, "--flush-interval", "100ms")
	if code, body := s.post("/v1/logs", "application/x-ndjson", "gzip", gz(events("api", "web-1", "e2e", 50))); code != 202 || !strings.Contains(body, `"accepted":50`) {
		t.Fatalf("POST gzip NDJSON = %d %s", code, body)
	}
	if code, body := s.post("/v1/logs/checkout", "application/json", "",
		[]byte(`[{"date":1795363200.25,"log":"from fluent bit","level":"ERR"},{"@timestamp":"2026-11-21T16:30:00Z","message":"from vector"}]`)); code != 202 {
		t.Fatalf("POST JSON array = %d %s", code, body)
	}
	if code, body := s.post("/v1/logs?service=plain", "text/plain", "", []byte("line one\nline two\n")); code != 202 || !strings.Contains(body, `"accepted":2`) {
		t.Fatalf("POST text = %d %s", code, body)
	}
	if code, body := s.post("/v1/logs", "application/x-ndjson", "", []byte("{\"msg\":\"ok\"}\nnot json\n{\"nomsg\":1}\n")); code != 202 ||
		!strings.Contains(body, `"line":2`) || !strings.Contains(body, `"line":3`) || !strings.Contains(body, `"rejected":2`) {
		t.Fatalf("POST with bad lines = %d %s", code, body)
	}
	if code, _ := s.post("/v1/logs", "application/x-ndjson", "", []byte("garbage\n")); code != 400 {
		t.Fatalf("POST with no valid line = %d, want 400", code)
	}
	if code, _ := s.post("/v1/logs", "application/x-ndjson", "br", []byte("x")); code != 415 {
		t.Fatalf("POST with an unknown encoding = %d, want 415", code)
	}
	// The events are readable through the query API once flushed.
	got := s.getLines("/v1/logs?service=api&from=2026-11-21T16:00:00Z&to=2026-11-21T17:00:00Z&limit=0", 50)
	if strings.Count(got, "\n") != 50 || !strings.Contains(got, `"id":"e2e-7"`) || !strings.Contains(got, `"n":7`) {
		t.Fatalf("query returned:\n%s", got)
	}
	// Login attempts: the newest first, through the API.
	now := time.Now().UTC()
	var logins []byte
	for i := range 5 {
		logins = fmt.Appendf(logins, `{"user":"alice","success":%v,"ip":"203.0.113.%d","ts":%q,"id":"att-%d"}`+"\n",
			i == 4, i, now.Add(time.Duration(i-10)*time.Second).Format(time.RFC3339Nano), i)
	}
	if code, body := s.post("/v1/logins", "application/x-ndjson", "", logins); code != 202 || !strings.Contains(body, `"accepted":5`) {
		t.Fatalf("POST logins = %d %s", code, body)
	}
	got = s.getLines("/v1/logins/alice?limit=3", 3)
	if strings.Count(got, "\n") != 3 {
		t.Fatalf("GET /v1/logins/alice = %q", got)
	}
	if i4, i3, i2 := strings.Index(got, `"att-4"`), strings.Index(got, `"att-3"`), strings.Index(got, `"att-2"`); i4 < 0 || i3 < i4 || i2 < i3 {
		t.Fatalf("logins not newest first: %s", got)
	}
	// OTLP/HTTP protobuf, as an OpenTelemetry exporter sends it.
	otlp, _ := proto.Marshal(&collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "otelsvc"}}}}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			TimeUnixNano: uint64(time.Date(2026, 11, 21, 16, 5, 0, 0, time.UTC).UnixNano()), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_WARN,
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "from an OTel SDK"}},
		}}}},
	}}})
	code, body := s.post("/v1/logs", "application/x-protobuf", "", otlp)
	var otlpResp collogs.ExportLogsServiceResponse
	if code != 200 || proto.Unmarshal([]byte(body), &otlpResp) != nil || otlpResp.PartialSuccess != nil {
		t.Fatalf("OTLP export = %d %q, want 200 with an empty ExportLogsServiceResponse", code, body)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	out, err := run("logins", "alice", "--data-dir", dir, "--limit", "2", "--format", "ndjson")
	if err != nil || strings.Count(string(out), "\n") != 2 || !strings.Contains(string(out), `"att-4"`) {
		t.Fatalf("ingest logins: %v\n%s", err, out)
	}
	out, err = run("stats", "api", "--data-dir", dir, "--day", "2026-11-21")
	if err != nil || !regexp.MustCompile(`16:00\s+50\s+0\s+0\s+50\s`).Match(out) {
		t.Fatalf("ingest stats: %v\n%s", err, out)
	}
	out, err = run("retention", "--dry-run", "--data-dir", dir)
	if err != nil || !strings.Contains(string(out), "no login table is older than 60 days") {
		t.Fatalf("ingest retention --dry-run: %v\n%s", err, out)
	}
	out, err = run("query", "--data-dir", dir, "--service", "otelsvc", "--from", "2026-11-21T16:00:00Z", "--to", "2026-11-21T17:00:00Z")
	if err != nil || !strings.Contains(string(out), `;warn;otelsvc;`) || !strings.Contains(string(out), `"from an OTel SDK"`) {
		t.Fatalf("OTLP event not stored: %v\n%s", err, out)
	}
	// The blob is where docs/contract.md says, and ls / cat show it.
	blob := filepath.Join(dir, "blobs", "logs", "api", "2026", "11", "21", "1600", "000001.log")
	if _, err := os.Stat(blob); err != nil {
		t.Fatalf("blob file: %v", err)
	}
	out, err = run("ls", "api/2026/11/21/1600", "--data-dir", dir)
	if err != nil || !strings.Contains(string(out), "api/2026/11/21/1600/000001.log") || !strings.Contains(string(out), "EventCount=50") ||
		!strings.Contains(string(out), "StartTime=2026-11-21T16:00:00.0000000Z") || !strings.Contains(string(out), "LogType=info") {
		t.Fatalf("ingest ls: %v\n%s", err, out)
	}
	out, err = run("cat", "--data-dir", dir, "api/2026/11/21/1600/000001.log")
	if err != nil || strings.Count(string(out), "\n") != 50 || !strings.HasPrefix(string(out), "1.0;2026-11-21T16:00:00.0000000Z;info;api;web-1;e2e-0;") {
		t.Fatalf("ingest cat: %v\n%s", err, out)
	}
	out, err = run("query", "--data-dir", dir, "--service", "checkout", "--from", "2026-11-21T16:00:00Z", "--to", "2026-11-21T17:00:00Z", "--format", "ndjson")
	if err != nil || !strings.Contains(string(out), `"message":"from vector"`) {
		t.Fatalf("ingest query: %v\n%s", err, out)
	}
	// INGEST_<FLAG> reaches every flag.
	cmd := ingestexec.Command(binary, "ls", "api/")
	cmd.Env = append(cmd.Env, "INGEST_DATA_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "000001.log") {
		t.Fatalf("ingest ls with INGEST_DATA_DIR: %v\n%s", err, out)
	}
}

// hammer posts batches with unique ids from several goroutines until stop
// is closed, and returns the ids of every batch answered 202.
func hammer(s *server, service, host, prefix string, workers, batch int, stop <-chan struct{}) func() []string {
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("%s-w%d-b%d", prefix, w, n)
				resp, err := client.Post(s.url+"/v1/logs", "application/x-ndjson", bytes.NewReader(events(service, host, p, batch)))
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 202 {
					mu.Lock()
					for i := range batch {
						acked = append(acked, fmt.Sprintf("%s-%d", p, i))
					}
					mu.Unlock()
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	return func() []string { wg.Wait(); return acked }
}

// TestKill9LosesNothing: kill -9 while requests and flushes are under way,
// twice; after restarts every acknowledged event is in a blob exactly once.
func TestKill9LosesNothing(t *testing.T) {
	for _, compression := range []string{"", "zstd"} {
		t.Run("compression="+compression, func(t *testing.T) { kill9LosesNothing(t, compression) })
	}
}

func kill9LosesNothing(t *testing.T, compression string) {
	dir := t.TempDir()
	args := []string{"--flush-interval", "30ms", "--flush-bytes", "64KiB", "--blob-compression", compression}
	var acked, ackedLogins []string
	for round := range 2 {
		s := start(t, dir, args...)
		stop := make(chan struct{})
		wait := hammer(s, "crash", "h1", fmt.Sprintf("r%d", round), 4, 100, stop)
		waitLogins := hammerLogins(s, fmt.Sprintf("r%d", round), stop)
		time.Sleep(700 * time.Millisecond)
		s.kill9()
		close(stop)
		acked = append(acked, wait()...)
		ackedLogins = append(ackedLogins, waitLogins()...)
	}
	s := start(t, dir, args...)
	if len(acked) == 0 || len(ackedLogins) == 0 {
		t.Fatal("no batch was acknowledged before the kills")
	}
	// Login attempts replayed from the WAL are upserted again: each once.
	s.waitDrained()
	storedLogins := map[string]int{}
	for _, user := range []string{"u0", "u1", "u2"} {
		resp, err := http.Get(s.url + "/v1/logins/" + user + "?days=2&limit=100000")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, m := range regexp.MustCompile(`"id":"([^"]+)"`).FindAllSubmatch(b, -1) {
			storedLogins[string(m[1])]++
		}
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	checkExactlyOnce(t, ackedLogins, storedLogins)
	store, err := blobsink.NewFileStore(filepath.Join(dir, "blobs", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := readIDs(t, store, "crash/")
	checkExactlyOnce(t, acked, stored)
	if n, _ := filepath.Glob(filepath.Join(dir, "wal", "wal-*.log")); len(n) != 1 {
		t.Errorf("after a clean stop %d WAL segments remain, want 1 (the open one)", len(n))
	}
}

// hammerLogins posts login attempts of users u0..u2 with unique ids until
// stop is closed, and returns the ids of every batch answered 202.
func hammerLogins(s *server, prefix string, stop <-chan struct{}) func() []string {
	var acked []string
	done := make(chan struct{})
	client := &http.Client{Timeout: 60 * time.Second}
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			var body []byte
			var ids []string
			for i := range 50 {
				id := fmt.Sprintf("%s-l%d-%d", prefix, n, i)
				ids = append(ids, id)
				body = fmt.Appendf(body, `{"user":"u%d","success":false,"ip":"198.51.100.7","id":%q}`+"\n", i%3, id)
			}
			resp, err := client.Post(s.url+"/v1/logins", "application/x-ndjson", bytes.NewReader(body))
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 202 {
				acked = append(acked, ids...)
			}
		}
	}()
	return func() []string { <-done; return acked }
}

func azureStore(t *testing.T, conn, container string) blobsink.Store {
	t.Helper()
	client, err := (&storage.Config{ConnString: conn}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	s, err := blobsink.NewAzureStore(context.Background(), client, container)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAzureTwoInstances: two processes write the same service and hour into
// one container at once: distinct blob numbers, no interleaving, nothing lost.
func TestAzureTwoInstances(t *testing.T) {
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("two%d", time.Now().UnixNano()%1e9)
	args := []string{"--storage", conn, "--container", container, "--flush-interval", "50ms", "--flush-bytes", "32KiB", "--blob-max-bytes", "256KiB"}
	a := start(t, t.TempDir(), args...)
	b := start(t, t.TempDir(), args...)
	stop := make(chan struct{})
	waitA := hammer(a, "shared", "instance-a", "a", 2, 100, stop)
	waitB := hammer(b, "shared", "instance-b", "b", 2, 100, stop)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	acked := append(waitA(), waitB()...)
	if a.stop() != 0 || b.stop() != 0 {
		t.Fatal("an instance did not exit 0")
	}
	stored, hosts := readIDs(t, azureStore(t, conn, container), "shared/2026/11/21/1600/")
	checkExactlyOnce(t, acked, stored)
	if len(hosts) < 2 {
		t.Fatalf("want blobs from both instances, got %d blobs", len(hosts))
	}
	for name, h := range hosts {
		if len(h) > 1 {
			t.Errorf("blob %s holds lines of both instances: %v", name, h)
		}
	}
}

// TestAzureOutage: Azurite stops answering for 20 s under load. Requests keep
// being acknowledged from the WAL (then refused with 429 once the budget is
// used up), flushes retry with backoff, and after it returns every
// acknowledged event is stored exactly once.
func TestAzureOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 25 s")
	}
	az := azurite.Shared(t)
	conn := az.ConnString()
	container := fmt.Sprintf("outage%d", time.Now().UnixNano()%1e9)
	s := start(t, t.TempDir(), "--storage", conn, "--container", container, "--flush-interval", "50ms",
		"--flush-bytes", "64KiB", "--buffer-bytes", "8MiB", "--storage-try-timeout", "2s")
	stop := make(chan struct{})
	wait := hammer(s, "outage", "h", "o", 2, 100, stop)
	time.Sleep(500 * time.Millisecond)
	if err := az.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	if err := az.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	acked := wait()
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	stored, _ := readIDs(t, azureStore(t, conn, container), "outage/")
	checkExactlyOnce(t, acked, stored)
	if !strings.Contains(s.Stderr(), "cannot flush logs, will retry") {
		t.Error("the outage left no retry in the log: was storage really unreachable?")
	}
}

// TestAzureRollover: a blob is closed at --blob-max-bytes and the next number claimed.
func TestAzureRollover(t *testing.T) {
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("roll%d", time.Now().UnixNano()%1e9)
	s := start(t, t.TempDir(), "--storage", conn, "--container", container, "--blob-max-bytes", "32KiB", "--flush-bytes", "8KiB", "--flush-interval", "50ms")
	var acked []string
	for i := range 10 {
		p := fmt.Sprintf("roll%d", i)
		if code, body := s.post("/v1/logs", "application/x-ndjson", "", events("roll", "h", p, 200)); code != 202 {
			t.Fatalf("POST = %d %s", code, body)
		}
		for j := range 200 {
			acked = append(acked, fmt.Sprintf("%s-%d", p, j))
		}
	}
	if s.stop() != 0 {
		t.Fatal("exit code not 0")
	}
	store := azureStore(t, conn, container)
	var infos []blobsink.BlobInfo
	store.List(context.Background(), "roll/", func(b blobsink.BlobInfo) error { infos = append(infos, b); return nil })
	var total int64
	for _, b := range infos {
		total += b.Size
	}
	if want := int(total/(32<<10)) + 1; len(infos) < want || len(infos) < 3 {
		t.Fatalf("%d blobs for %d bytes at --blob-max-bytes 32KiB, want at least %d", len(infos), total, want)
	}
	for i, b := range infos {
		if want := blobsink.BlobName("roll/2026/11/21/1600", i+1, blobsink.CompressNone); b.Name != want {
			t.Errorf("blob %d is %s, want %s", i, b.Name, want)
		}
		if b.Size > 32<<10 {
			t.Errorf("blob %s is %d bytes, over 32 KiB", b.Name, b.Size)
		}
		if _, ok := blobsink.ParseMeta(b.Metadata); !ok {
			t.Errorf("blob %s lacks StartTime/EndTime metadata: %v", b.Name, b.Metadata)
		}
	}
	stored, _ := readIDs(t, store, "roll/")
	checkExactlyOnce(t, acked, stored)
}
