package intake

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"ingest/admission"
	"ingest/internal/httperr"
)

// compress encodes data the way clients send it for each encoding name
// used in the tests.
func compress(t testing.TB, enc string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zstd":
		w, err = zstd.NewWriter(&buf)
	case "deflate-zlib":
		w = zlib.NewWriter(&buf)
	case "deflate-raw":
		w, err = flate.NewWriter(&buf, flate.DefaultCompression)
	case "snappy-framed":
		w = snappy.NewBufferedWriter(&buf)
	case "s2-framed":
		w = s2.NewWriter(&buf)
	case "snappy-block":
		return snappy.Encode(nil, data)
	default:
		t.Fatalf("no encoder %q", enc)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecompressRoundTrip(t *testing.T) {
	data := benchBody(500)
	for _, tc := range []struct{ enc, header string }{
		{"gzip", "gzip"}, {"gzip", "x-gzip"}, {"gzip", " GZIP "}, {"zstd", "zstd"},
		{"deflate-zlib", "deflate"}, {"deflate-raw", "deflate"},
		{"snappy-framed", "snappy"}, {"snappy-block", "snappy"}, {"s2-framed", "snappy"},
	} {
		body := compress(t, tc.enc, data)
		// Twice, so the second run goes through a pooled, reset decoder, and
		// into a dst that already holds bytes.
		for run := range 2 {
			prefix := []byte("keep")
			out, err := Decompress(prefix, body, tc.header, len(data), nil)
			if err != nil {
				t.Fatalf("%s (%q) run %d: %v", tc.enc, tc.header, run, err)
			}
			if !bytes.HasPrefix(out, []byte("keep")) || !bytes.Equal(out[4:], data) {
				t.Fatalf("%s run %d: decoded %d bytes, not the %d sent", tc.enc, run, len(out)-4, len(data))
			}
		}
		// One byte less than the decoded size is over the limit.
		if _, err := Decompress(nil, body, tc.header, len(data)-1, nil); httperr.StatusOf(err) != 413 ||
			!strings.Contains(err.Error(), "--max-decompressed-bytes") {
			t.Fatalf("%s with a limit one byte short: %v, want a 413 naming the flag", tc.enc, err)
		}
	}
}

func TestDecompressIdentity(t *testing.T) {
	for _, enc := range []string{"", "identity", "Identity"} {
		out, err := Decompress(nil, []byte("abc"), enc, 3, nil)
		if err != nil || string(out) != "abc" {
			t.Fatalf("%q: %q %v", enc, out, err)
		}
		if _, err := Decompress(nil, []byte("abcd"), enc, 3, nil); httperr.StatusOf(err) != 413 {
			t.Fatalf("%q over the limit: %v, want 413", enc, err)
		}
	}
}

func TestDecompressErrors(t *testing.T) {
	good := compress(t, "gzip", []byte("hello"))
	for _, tc := range []struct {
		body, enc string
		status    int
	}{
		{"x", "br", 415},
		{"x", "compress", 415},
		{"x", "gzip, br", 415},
		{"", "br", 415},
		{"not gzip", "gzip", 400},
		{string(good[:len(good)-6]), "gzip", 400}, // truncated
		{"not zstd", "zstd", 400},
		{"\xff\xff\xff", "deflate", 400},
		{"\xff\xff\xff\xff\xff\xff", "snappy", 400},
		{"\x05ab", "snappy", 400}, // block shorter than it claims
	} {
		_, err := Decompress(nil, []byte(tc.body), tc.enc, 1<<20, nil)
		if httperr.StatusOf(err) != tc.status {
			t.Errorf("Decompress(%q, %q) = %v, want status %d", tc.body, tc.enc, err, tc.status)
		}
	}
	for _, enc := range []string{"gzip", "zstd", "deflate", "snappy", ""} {
		if out, err := Decompress(nil, nil, enc, 10, nil); err != nil || len(out) != 0 {
			t.Errorf("empty %q body: %q %v, want nothing", enc, out, err)
		}
	}
}

// zeros writes n zero bytes to w in small chunks, so building a bomb never
// holds its decoded size in memory.
func zeros(t testing.TB, w io.Writer, n int) {
	chunk := make([]byte, 64<<10)
	for ; n > 0; n -= len(chunk) {
		if _, err := w.Write(chunk[:min(n, len(chunk))]); err != nil {
			t.Fatal(err)
		}
	}
}

// bomb returns a body that decodes to 1 GiB of zeros: one 64 MiB member or
// frame, compressed once with a streaming writer and repeated 16 times
// (gzip members and zstd frames may be concatenated).
func bomb(t testing.TB, enc string) []byte {
	var one bytes.Buffer
	switch enc {
	case "gzip":
		w, _ := gzip.NewWriterLevel(&one, gzip.BestSpeed)
		zeros(t, w, 64<<20)
		w.Close()
	case "zstd":
		w, _ := zstd.NewWriter(&one, zstd.WithEncoderLevel(zstd.SpeedFastest))
		zeros(t, w, 64<<20)
		w.Close()
	}
	return bytes.Repeat(one.Bytes(), 16)
}

func TestDecompressBomb(t *testing.T) {
	const limit = 8 << 20
	for _, enc := range []string{"gzip", "zstd"} {
		body := bomb(t, enc)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Decompress(nil, body, enc, limit, nil)
		runtime.ReadMemStats(&after)
		if httperr.StatusOf(err) != 413 {
			t.Fatalf("%s bomb (%d bytes -> 1 GiB): %v, want 413", enc, len(body), err)
		}
		// Everything allocated while decoding, the garbage of each growth
		// step included (zstd grows its output by 1.25x steps, so it sums to
		// about 5x the limit), plus the decoder's state: far from 1 GiB.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*limit {
			t.Fatalf("%s bomb: decoding allocated %d MiB, want under %d MiB", enc, alloc>>20, 8*limit>>20)
		}
		t.Logf("%s bomb: %d KiB body refused after %d KiB allocated", enc, len(body)>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
	}
	// A snappy block states its decoded length up front: refused unread.
	block := binary.AppendUvarint(nil, 1<<30)
	block = append(block, make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decompress(nil, block, "snappy", limit, nil)
	runtime.ReadMemStats(&after)
	if httperr.StatusOf(err) != 413 || after.TotalAlloc-before.TotalAlloc > 1<<20 {
		t.Fatalf("snappy block claiming 1 GiB: %v after %d bytes allocated, want an immediate 413", err, after.TotalAlloc-before.TotalAlloc)
	}
}

// budget is a request's share of a budget of limit bytes: the real
// admission.Hold, whose Held tells what was reserved.
func budget(limit int64) *admission.Hold {
	var h admission.Hold
	h.Begin(admission.New(limit, "test bytes", "--test-bytes"), context.Background(), 0)
	return &h
}

// Every decoded byte's memory is reserved before it is used, whatever the
// encoding and whether dst comes with room (a pooled buffer) or not; and a
// budget smaller than the body ends decoding with the budget's refusal,
// having allocated about the budget, not the decoded size.
func TestDecompressReservesBeforeAllocating(t *testing.T) {
	data := bytes.Repeat(benchBody(100), 40) // about 1.2 MiB
	encs := []struct{ enc, header string }{
		{"gzip", "gzip"}, {"zstd", "zstd"}, {"zstd-nosize", "zstd"}, {"deflate-zlib", "deflate"}, {"deflate-raw", "deflate"},
		{"snappy-framed", "snappy"}, {"snappy-block", "snappy"}, {"s2-framed", "snappy"}, {"identity", ""},
	}
	// The encodings whose bodies state their decoded size.
	sized := map[string]bool{"gzip": true, "snappy-block": true, "identity": true}
	for _, tc := range encs {
		body := data
		switch tc.enc {
		case "identity":
		case "zstd-nosize": // a stream: the frame does not state its size
			var buf bytes.Buffer
			w, _ := zstd.NewWriter(&buf)
			_, _ = io.Copy(w, iotest.OneByteReader(bytes.NewReader(data[:1<<16])))
			_, _ = w.Write(data[1<<16:])
			w.Close()
			body = buf.Bytes()
		default:
			body = compress(t, tc.enc, data)
		}
		for _, pooled := range []int{0, 256 << 10, 4 << 20} {
			mem := budget(64 << 20)
			out, err := Decompress(make([]byte, 3, 3+pooled), body, tc.header, 8<<20, mem)
			if err != nil || !bytes.Equal(out[3:], data) {
				t.Fatalf("%s, dst with room for %d: %v", tc.enc, pooled, err)
			}
			if fresh := int64(cap(out) - 3); pooled == 0 && mem.Held() < fresh || mem.Held() < int64(len(data)) {
				t.Errorf("%s, dst with room for %d: reserved %d bytes for %d decoded in a buffer of %d", tc.enc, pooled, mem.Held(), len(data), cap(out)-3)
			}
			// Growth by doubling: at most twice the size; the size itself
			// when the body states it.
			most := 2*int64(len(data)) + 128<<10
			if sized[tc.enc] {
				most = int64(len(data)) + 1<<10
			}
			if tc.enc != "s2-framed" && mem.Held() > most {
				t.Errorf("%s, dst with room for %d: reserved %d bytes for %d decoded, want at most %d", tc.enc, pooled, mem.Held(), len(data), most)
			}
		}
		const small = 256 << 10
		mem := budget(small)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Decompress(nil, body, tc.header, 8<<20, mem)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, admission.ErrRefused) {
			t.Errorf("%s with a budget of %d bytes: %v, want the budget's refusal", tc.enc, small, err)
		}
		// The output's steps within the budget, plus the decoder's own state.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*small+128<<10 && tc.enc != "s2-framed" {
			t.Errorf("%s with a budget of %d bytes: %d bytes allocated before the refusal", tc.enc, small, alloc)
		}
	}
}

func TestLooksZlib(t *testing.T) {
	if !looksZlib(compress(t, "deflate-zlib", []byte("x"))) || looksZlib(compress(t, "deflate-raw", []byte("x"))) {
		t.Fatal("looksZlib misjudges a zlib or a raw deflate stream")
	}
}

func FuzzDecompress(f *testing.F) {
	data := benchBody(3)
	for i, enc := range []string{"gzip", "zstd", "deflate-zlib", "deflate-raw", "snappy-framed", "snappy-block"} {
		f.Add(compress(f, enc, data), uint8(i))
	}
	encs := []string{"gzip", "zstd", "deflate", "deflate", "snappy", "snappy", "", "br"}
	f.Fuzz(func(t *testing.T, body []byte, e uint8) {
		const limit = 1 << 16
		out, err := Decompress(nil, body, encs[int(e)%len(encs)], limit, nil)
		if err != nil {
			if s := httperr.StatusOf(err); s != 400 && s != 413 && s != 415 {
				t.Fatalf("error %v has status %d", err, s)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("decoded %d bytes past the %d limit", len(out), limit)
		}
	})
}

func benchmarkDecompress(b *testing.B, enc, header string) {
	data := benchBody(1000)
	body := compress(b, enc, data)
	dst := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = Decompress(dst[:0], body, header, 64<<20, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data))/float64(len(body)), "ratio")
}

func BenchmarkDecompressGzip(b *testing.B)   { benchmarkDecompress(b, "gzip", "gzip") }
func BenchmarkDecompressZstd(b *testing.B)   { benchmarkDecompress(b, "zstd", "zstd") }
func BenchmarkDecompressSnappy(b *testing.B) { benchmarkDecompress(b, "snappy-block", "snappy") }
