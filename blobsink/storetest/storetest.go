// Package storetest is the conformance suite for blobsink.Store: the
// behaviour the sink and the query side rely on, run the same way against the
// embedded FileStore and the Azure AzureStore.
//
//	func TestFileStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) blobsink.Store {
//			s, err := blobsink.NewFileStore(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Every test names its blobs under a prefix made from t.Name(), so stores
// returned by newStore may share one container or directory. The suite moves
// about 10 MiB per store and takes well under a second against Azurite.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"ingest/blobsink"
)

// Run runs the suite; newStore is called once per test.
func Run(t *testing.T, newStore func(t *testing.T) blobsink.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blobsink.Store)
	}{
		{"CreateIfAbsent", testCreateIfAbsent},
		{"CreateRace", testCreateRace},
		{"AppendPosition", testAppendPosition},
		{"AppendInPieces", testAppendInPieces},
		{"Missing", testMissing},
		{"StatAndMetadata", testStatAndMetadata},
		{"SetMetadataReplaces", testSetMetadataReplaces},
		{"ListByPrefix", testListByPrefix},
		{"ListStops", testListStops},
		{"OpenRoundTrip", testOpenRoundTrip},
		{"MaxBlock", testMaxBlock},
		{"RetriedAppend", testRetriedAppend},
		{"EmptyAppend", testEmptyAppend},
		{"ReadRange", testReadRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// prefix is the test's own folder: t.Name() with every byte a blob name or a
// file name could object to replaced.
func prefix(t *testing.T) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, t.Name()) + "/"
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func testCreateIfAbsent(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"svc/2026/11/21/1800/000001.log"
	if err := s.Create(c, name, map[string]string{blobsink.MetaLogVersion: "1.0"}); err != nil {
		t.Fatalf("first Create: %v", err)
	}
	err := s.Create(c, name, map[string]string{blobsink.MetaLogVersion: "2.0"})
	if !errors.Is(err, blobsink.ErrExists) {
		t.Fatalf("second Create = %v, want ErrExists", err)
	}
	info, err := s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := blobsink.MetaValue(info.Metadata, blobsink.MetaLogVersion); v != "1.0" {
		t.Errorf("after a refused Create the metadata is %v, want the first Create's", info.Metadata)
	}
}

// testCreateRace has writers claim blob numbers the way the sink does: try
// 1, 2, 3... and keep the numbers whose Create succeeded.
func testCreateRace(t *testing.T, s blobsink.Store) {
	const writers, perWriter = 8, 5
	c, hour := ctx(t), prefix(t)+"svc/2026/11/21/1800"
	var (
		mu      sync.Mutex
		claimed = map[int]int{} // number -> writer
		errs    []error
		wg      sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			seq := 1
			for got := 0; got < perWriter; seq++ {
				err := s.Create(c, blobsink.BlobName(hour, seq, blobsink.CompressNone), nil)
				if errors.Is(err, blobsink.ErrExists) {
					continue
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if prev, dup := claimed[seq]; dup {
					errs = append(errs, fmt.Errorf("number %d claimed by writers %d and %d", seq, prev, w))
				}
				claimed[seq] = w
				mu.Unlock()
				got++
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for seq := 1; seq <= writers*perWriter; seq++ {
		if _, ok := claimed[seq]; !ok {
			t.Errorf("number %d claimed by no writer", seq)
		}
	}
	var listed int
	if err := s.List(c, hour+"/", func(blobsink.BlobInfo) error { listed++; return nil }); err != nil {
		t.Fatal(err)
	}
	if listed != writers*perWriter {
		t.Errorf("listed %d blobs, want %d", listed, writers*perWriter)
	}
}

func testAppendPosition(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"a.log"
	mustCreate(t, s, name, nil)
	first := []byte("line 1\n")
	if err := s.Append(c, name, 0, first); err != nil {
		t.Fatalf("Append at 0: %v", err)
	}
	for _, off := range []int64{0, 3, int64(len(first)) + 1} {
		if err := s.Append(c, name, off, []byte("wrong\n")); !errors.Is(err, blobsink.ErrAppendPosition) {
			t.Errorf("Append at offset %d of a %d-byte blob = %v, want ErrAppendPosition", off, len(first), err)
		}
	}
	second := []byte("line 2\n")
	if err := s.Append(c, name, int64(len(first)), second); err != nil {
		t.Fatalf("Append at the end: %v", err)
	}
	wantContent(t, s, name, append(slices.Clone(first), second...))
}

// testAppendInPieces: a block given in pieces is one block of the pieces'
// bytes in order (the sink joins a key's waiting chunks so), under the
// same append-position condition.
func testAppendInPieces(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"p.log"
	mustCreate(t, s, name, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	head := randomBytes(rng, 100)
	if err := s.Append(c, name, 0, head); err != nil {
		t.Fatal(err)
	}
	pieces := [][]byte{randomBytes(rng, 64<<10), nil, randomBytes(rng, 3), randomBytes(rng, 200<<10)}
	if err := s.Append(c, name, 0, pieces...); !errors.Is(err, blobsink.ErrAppendPosition) {
		t.Fatalf("Append in pieces at a wrong offset = %v, want ErrAppendPosition", err)
	}
	if err := s.Append(c, name, int64(len(head)), pieces...); err != nil {
		t.Fatalf("Append in pieces: %v", err)
	}
	info, err := s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Blocks != 0 && info.Blocks != 2 {
		t.Errorf("blocks after one append in pieces %d, want 2", info.Blocks)
	}
	wantContent(t, s, name, slices.Concat(append([][]byte{head}, pieces...)...))
}

func testMissing(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"absent.log"
	if err := s.Append(c, name, 0, []byte("x\n")); !errors.Is(err, blobsink.ErrNotFound) {
		t.Errorf("Append = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(c, name); !errors.Is(err, blobsink.ErrNotFound) {
		t.Errorf("Stat = %v, want ErrNotFound", err)
	}
	if err := s.SetMetadata(c, name, map[string]string{blobsink.MetaEventCount: "1"}); !errors.Is(err, blobsink.ErrNotFound) {
		t.Errorf("SetMetadata = %v, want ErrNotFound", err)
	}
	if r, err := s.Open(c, name); !errors.Is(err, blobsink.ErrNotFound) {
		if r != nil {
			r.Close()
		}
		t.Errorf("Open = %v, want ErrNotFound", err)
	}
}

func testStatAndMetadata(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"svc/2026/11/21/1800/000001.log"
	meta := map[string]string{
		blobsink.MetaLogVersion: "1.0",
		blobsink.MetaStartTime:  "2026-11-21T18:04:05.1234567Z",
		blobsink.MetaEndTime:    "2026-11-21T18:59:59.9999999Z",
		blobsink.MetaLogType:    "error,info",
		blobsink.MetaEventCount: "2",
	}
	mustCreate(t, s, name, meta)
	info, err := s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != name || info.Size != 0 || info.Blocks != 0 {
		t.Errorf("new blob: Stat = %+v, want name %s, size 0, 0 blocks", info, name)
	}
	wantMeta(t, info.Metadata, meta)
	blocks := [][]byte{[]byte("one\n"), []byte("two two\n"), []byte("three three three\n")}
	var size int64
	for _, b := range blocks {
		if err := s.Append(c, name, size, b); err != nil {
			t.Fatal(err)
		}
		size += int64(len(b))
	}
	info, err = s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != size {
		t.Errorf("Stat size = %d, want %d", info.Size, size)
	}
	// A store that does not count blocks (the embedded one) reports 0.
	if info.Blocks != 0 && info.Blocks != len(blocks) {
		t.Errorf("Stat blocks = %d, want %d (or 0 from a store without block limits)", info.Blocks, len(blocks))
	}
	wantMeta(t, info.Metadata, meta)
	// The typed view reads back what Meta.Map wrote.
	m, ok := blobsink.ParseMeta(info.Metadata)
	if !ok || m.Count != 2 || m.Start >= m.End {
		t.Errorf("ParseMeta(%v) = %+v, %v", info.Metadata, m, ok)
	}
}

func testSetMetadataReplaces(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"m.log"
	mustCreate(t, s, name, map[string]string{blobsink.MetaLogVersion: "1.0", blobsink.MetaLogType: "info"})
	if err := s.Append(c, name, 0, []byte("kept\n")); err != nil {
		t.Fatal(err)
	}
	next := map[string]string{blobsink.MetaLogVersion: "1.0", blobsink.MetaEventCount: "7"}
	if err := s.SetMetadata(c, name, next); err != nil {
		t.Fatal(err)
	}
	info, err := s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta(t, info.Metadata, next)
	if v, ok := blobsink.MetaValue(info.Metadata, blobsink.MetaLogType); ok {
		t.Errorf("LogType = %q survived SetMetadata, which must replace the whole set", v)
	}
	// Metadata is not content: the append position is unchanged.
	if err := s.Append(c, name, info.Size, []byte("more\n")); err != nil {
		t.Errorf("Append after SetMetadata: %v", err)
	}
	wantContent(t, s, name, []byte("kept\nmore\n"))
}

func testListByPrefix(t *testing.T, s blobsink.Store) {
	c, root := ctx(t), prefix(t)
	names := []string{
		root + "svc/2026/11/21/1600/000001.log",
		root + "svc/2026/11/21/1600/000002.log.zst",
		root + "svc/2026/11/21/1700/000001.log",
		root + "svc/2026/11/22/1600/000001.log",
		root + "svc2/2026/11/21/1600/000001.log",
		root + "other/2026/11/21/1600/000001.log",
	}
	for i, name := range names {
		mustCreate(t, s, name, map[string]string{blobsink.MetaEventCount: fmt.Sprint(i)})
		if err := s.Append(c, name, 0, bytes.Repeat([]byte("x"), i+1)); err != nil {
			t.Fatal(err)
		}
	}
	f := func(prefix string, want ...int) {
		t.Helper()
		got := map[string]blobsink.BlobInfo{}
		err := s.List(c, root+prefix, func(info blobsink.BlobInfo) error {
			if _, dup := got[info.Name]; dup {
				t.Errorf("List(%q) gave %s twice", prefix, info.Name)
			}
			got[info.Name] = info
			return nil
		})
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var wantNames []string
		for _, i := range want {
			wantNames = append(wantNames, names[i])
			info, ok := got[names[i]]
			if !ok {
				continue
			}
			if info.Size != int64(i+1) {
				t.Errorf("List(%q): %s size %d, want %d", prefix, info.Name, info.Size, i+1)
			}
			if v, _ := blobsink.MetaValue(info.Metadata, blobsink.MetaEventCount); v != fmt.Sprint(i) {
				t.Errorf("List(%q): %s metadata %v, want EventCount=%d", prefix, info.Name, info.Metadata, i)
			}
		}
		gotNames := make([]string, 0, len(got))
		for n := range got {
			gotNames = append(gotNames, n)
		}
		sort.Strings(gotNames)
		sort.Strings(wantNames)
		if !slices.Equal(gotNames, wantNames) {
			t.Errorf("List(%q) = %q, want %q", prefix, gotNames, wantNames)
		}
	}
	f("svc/2026/11/21/1600/", 0, 1)
	f("svc/2026/11/21/16", 0, 1) // hour folders are "hh00": "16" is the 1600 folder only
	f("svc/2026/11/21/1600/000001", 0)
	f("svc/2026/11/21/", 0, 1, 2)
	f("svc/", 0, 1, 2, 3)
	f("svc", 0, 1, 2, 3, 4)
	f("", 0, 1, 2, 3, 4, 5)
	f("svc/2026/11/21/1800/")
	f("nothing/")
	f("svc/2026/11/21/1600/000001.log/")
}

func testListStops(t *testing.T, s blobsink.Store) {
	c, root := ctx(t), prefix(t)
	for i := range 3 {
		mustCreate(t, s, fmt.Sprintf("%sdir/%06d.log", root, i+1), nil)
	}
	stop := errors.New("enough")
	calls := 0
	err := s.List(c, root, func(blobsink.BlobInfo) error { calls++; return stop })
	if !errors.Is(err, stop) {
		t.Errorf("List = %v, want fn's error", err)
	}
	if calls != 1 {
		t.Errorf("fn called %d times after returning an error, want 1", calls)
	}
}

func testOpenRoundTrip(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"r.log"
	mustCreate(t, s, name, nil)
	wantContent(t, s, name, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte
	for _, n := range []int{1, 100, 64 << 10, 3, 300 << 10, 1} {
		b := randomBytes(rng, n)
		if err := s.Append(c, name, int64(len(all)), b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	wantContent(t, s, name, all)
}

// testMaxBlock appends blocks of 16 MiB, four times Azure's block limit
// before service version 2022-11-02: the store sends the version that
// takes them. (MaxAppendBytes itself, 100 MiB, is too slow for the suite.)
func testMaxBlock(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"big.log"
	mustCreate(t, s, name, nil)
	const big = 16 << 20
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := randomBytes(rng, big), randomBytes(rng, big)
	if err := s.Append(c, name, 0, a); err != nil {
		t.Fatalf("Append of 16 MiB: %v", err)
	}
	if err := s.Append(c, name, int64(len(a)), b); err != nil {
		t.Fatalf("second Append of 16 MiB: %v", err)
	}
	info, err := s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != 2*big {
		t.Errorf("size %d, want %d", info.Size, 2*big)
	}
	wantContent(t, s, name, append(a, b...))
}

// testRetriedAppend replays what a writer does when an append's response is
// lost: it sends the same block at the same offset again. The condition turns
// the duplicate away and the block is in the blob exactly once.
func testRetriedAppend(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"retry.log"
	mustCreate(t, s, name, nil)
	head := []byte("head\n")
	if err := s.Append(c, name, 0, head); err != nil {
		t.Fatal(err)
	}
	block := []byte("1.0;2026-11-21T18:04:05.1234567Z;info;api;web-1;01J;\"hello\";{}\n")
	off := int64(len(head))
	if err := s.Append(c, name, off, block); err != nil {
		t.Fatal(err)
	}
	// The response was "lost": the writer retries with the offset it had.
	err := s.Append(c, name, off, block)
	if !errors.Is(err, blobsink.ErrAppendPosition) {
		t.Fatalf("retried Append = %v, want ErrAppendPosition", err)
	}
	// How the writer tells its own landed block from someone else's.
	info, err := s.Stat(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != off+int64(len(block)) {
		t.Errorf("size after the retry %d, want %d: the block must be there exactly once", info.Size, off+int64(len(block)))
	}
	if info.Blocks != 0 && info.Blocks != 2 {
		t.Errorf("blocks after the retry %d, want 2", info.Blocks)
	}
	wantContent(t, s, name, append(slices.Clone(head), block...))
}

func testEmptyAppend(t *testing.T, s blobsink.Store) {
	c, name := ctx(t), prefix(t)+"e.log"
	mustCreate(t, s, name, nil)
	if err := s.Append(c, name, 0, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(c, name, 3, nil); err != nil {
		t.Errorf("empty Append at the end = %v, want nil", err)
	}
	if err := s.Append(c, name, 0, nil); !errors.Is(err, blobsink.ErrAppendPosition) {
		t.Errorf("empty Append at a wrong offset = %v, want ErrAppendPosition", err)
	}
	if err := s.Append(c, prefix(t)+"absent.log", 0, nil); !errors.Is(err, blobsink.ErrNotFound) {
		t.Errorf("empty Append to a missing blob = %v, want ErrNotFound", err)
	}
	wantContent(t, s, name, []byte("abc"))
}

// testReadRange: a store that reads part of a blob (the sink uses it to
// tell its own block from another writer's) returns exactly those bytes,
// io.ErrUnexpectedEOF past the end and ErrNotFound for a missing blob.
func testReadRange(t *testing.T, s blobsink.Store) {
	r, ok := s.(interface {
		ReadRange(ctx context.Context, name string, offset int64, n int) ([]byte, error)
	})
	if !ok {
		t.Skipf("%T does not read ranges (optional)", s)
	}
	c, name := ctx(t), prefix(t)+"range.log"
	mustCreate(t, s, name, nil)
	data := randomBytes(rand.New(rand.NewPCG(3, 4)), 10000)
	if err := s.Append(c, name, 0, data); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadRange(c, name, 1234, 5000)
	if err != nil || !bytes.Equal(got, data[1234:6234]) {
		t.Fatalf("ReadRange(1234, 5000) = %d bytes, %v; want the blob's bytes 1234..6234", len(got), err)
	}
	if _, err := r.ReadRange(c, name, 9000, 2000); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadRange past the end: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := r.ReadRange(c, prefix(t)+"missing.log", 0, 10); !errors.Is(err, blobsink.ErrNotFound) {
		t.Errorf("ReadRange of a missing blob: %v, want ErrNotFound", err)
	}
}

func mustCreate(t *testing.T, s blobsink.Store, name string, meta map[string]string) {
	t.Helper()
	if err := s.Create(ctx(t), name, meta); err != nil {
		t.Fatalf("Create %s: %v", name, err)
	}
}

func wantMeta(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g, ok := blobsink.MetaValue(got, k); !ok || g != v {
			t.Errorf("metadata %s = %q (present %v), want %q; all: %v", k, g, ok, v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metadata has %d keys, want %d: %v", len(got), len(want), got)
	}
}

func wantContent(t *testing.T, s blobsink.Store, name string, want []byte) {
	t.Helper()
	r, err := s.Open(ctx(t), name)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s holds %d bytes, want %d; first difference at %d", name, len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, n); j++ {
			b[j] = byte(v)
			v >>= 8
		}
	}
	return b
}
