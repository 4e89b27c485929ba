package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"ingest/buffer"
	"ingest/logline"
)

// bombBody is 64 MiB of zeros compressed with enc: tens of KiB on the wire.
func bombBody(t *testing.T, enc string) []byte {
	t.Helper()
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
	zeros := make([]byte, 1<<20)
	for range 64 {
		if _, err := w.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// Hostile bodies against the real handler: each is refused or rejected line
// by line with the status docs/contract.md names, its neighbours are stored intact,
// and nothing it does keeps a key from being flushed (a service name the
// store refuses used to wedge its key: its flush was retried forever and
// shutdown never finished).
func TestHostileInput(t *testing.T) {
	cfg := Config{MaxBodyBytes: 16 << 20, MaxDecompressedBytes: 16 << 20, MaxInflightBytes: 64 << 20, ReadTimeout: 30 * time.Second}
	f := newFixture(t, cfg, buffer.Config{})
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	hdr := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	line := func(msg string) string { return `{"msg":"` + msg + `"}` }
	huge := line(strings.Repeat("x", 10<<20))
	deepArrays := `{"msg":"deep","a":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`
	deepObjects := `{"msg":"deep","a":` + strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + `}`
	snappyBlock := append(binary.AppendUvarint(nil, 1<<30), make([]byte, 100)...) // claims 1 GiB decoded
	long := strings.Repeat("s", 1000)

	cases := []struct {
		name   string
		path   string
		hdr    map[string]string
		body   []byte
		status int
		want   string // in the answer
	}{
		{"gzip bomb", "/v1/logs", hdr("Content-Type", "application/x-ndjson", "Content-Encoding", "gzip"), bombBody(t, "gzip"), 413, "--max-decompressed-bytes"},
		{"zstd bomb", "/v1/logs", hdr("Content-Type", "application/x-ndjson", "Content-Encoding", "zstd"), bombBody(t, "zstd"), 413, "--max-decompressed-bytes"},
		{"deflate bomb", "/v1/logs", hdr("Content-Type", "application/x-ndjson", "Content-Encoding", "deflate"), bombBody(t, "deflate"), 413, "--max-decompressed-bytes"},
		{"snappy bomb", "/v1/logs", hdr("Content-Type", "application/x-ndjson", "Content-Encoding", "snappy"), bombBody(t, "snappy"), 413, "--max-decompressed-bytes"},
		{"snappy block claiming 1 GiB", "/v1/logs", hdr("Content-Type", "application/x-ndjson", "Content-Encoding", "snappy"), snappyBlock, 413, "--max-decompressed-bytes"},
		{"10 MB single line", "/v1/logs", ndjson, []byte(huge), 400, "longer than the 1048576 byte limit"},
		{"10 MB line between good ones", "/v1/logs", ndjson, []byte(line("huge-before") + "\n" + huge + "\n" + line("huge-after")), 202, `"accepted":2,"rejected":1,"errors":[{"line":2,`},
		{"10 MB text line", "/v1/logs", hdr("Content-Type", "text/plain"), []byte(strings.Repeat("x", 10<<20)), 400, "longer than"},
		{"JSON arrays nested 100,000 deep", "/v1/logs", ndjson, []byte(deepArrays), 400, "nested deeper than"},
		{"JSON objects nested 100,000 deep", "/v1/logs", ndjson, []byte(line("deep-before") + "\n" + deepObjects + "\n" + line("deep-after")), 202, `"accepted":2,"rejected":1,"errors":[{"line":2,"error":"cannot parse JSON: nested deeper than`},
		{"JSON array body nested 100,000 deep", "/v1/logs", hdr("Content-Type", "application/json"), []byte(strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)), 400, ""},
		{"invalid UTF-8", "/v1/logs/utf8", ndjson, []byte(line("utf8-before") + "\n" + "{\"msg\":\"bad \xff\xfe here\",\"k\xff\":\"v\xc3\"}" + "\n" + line("utf8-after")), 202, `"accepted":3,"rejected":0`},
		{"invalid UTF-8 text", "/v1/logs/utf8text", hdr("Content-Type", "text/plain"), []byte("text-before\nbad \xff\xfe text\ntext-after"), 202, `"accepted":3,"rejected":0`},
		{"service ../../etc in the event", "/v1/logs", ndjson, []byte(`{"msg":"svc","service":"../../etc"}`), 202, `"accepted":1`},
		{"service ../../etc in X-Service", "/v1/logs", hdr("X-Service", "../../etc"), []byte(line("svc")), 202, `"accepted":1`},
		{"service ..%2F..%2Fetc in the query", "/v1/logs?service=..%2F..%2Fetc", nil, []byte(line("svc")), 202, `"accepted":1`},
		{"service a/b in the event", "/v1/logs", ndjson, []byte(`{"msg":"svc","service":"a/b"}`), 202, `"accepted":1`},
		{"service a/b in the path", "/v1/logs/a/b", nil, []byte(line("svc")), 202, `"accepted":1`},
		{"empty service", "/v1/logs", ndjson, []byte(`{"msg":"svc","service":""}`), 202, `"accepted":1`},
		{"service of 1,000 bytes in the event", "/v1/logs", ndjson, []byte(`{"msg":"svc","service":"` + long + `"}`), 202, `"accepted":1`},
		{"service of 1,000 bytes in the path", "/v1/logs/" + long, nil, []byte(line("svc")), 202, `"accepted":1`},
	}
	for _, tc := range cases {
		status, _, body := f.do(t, "POST", tc.path, tc.hdr, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %.300s, want %d with %q", tc.name, status, body, tc.status, tc.want)
		}
	}

	// Everything accepted is stored: no key is wedged.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.buf.Close(ctx); err != nil {
		t.Fatalf("cannot flush what hostile requests left: %v", err)
	}
	entries, err := os.ReadDir(f.blobs)
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]bool{}
	for _, e := range entries {
		services[e.Name()] = true
		if !logline.IsToken([]byte(e.Name())) || strings.HasPrefix(e.Name(), ".") || len(e.Name()) > logline.MaxServiceLen {
			t.Errorf("service directory %q is not a safe path segment", e.Name())
		}
	}
	for _, want := range []string{"_._.._etc", "a_b", "default", strings.Repeat("s", logline.MaxServiceLen), "utf8", "utf8text"} {
		if !services[want] {
			t.Errorf("no blobs for service %q; services: %v", want, services)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(f.blobs), "etc")); err == nil {
		t.Error("a service name wrote outside the blob directory")
	}
	stored := storedText(t, f.blobs)
	for _, want := range []string{"huge-before", "huge-after", "deep-before", "deep-after", "utf8-before", "utf8-after", "text-before", "text-after",
		"bad \uFFFD\uFFFD here", "bad \uFFFD\uFFFD text"} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored blobs lack %q", want)
		}
	}
}
