package blobsink_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"ingest/blobsink"
	"ingest/blobsink/storetest"
	"ingest/internal/azurite"
	"ingest/internal/benchcpu"
	"ingest/storage"
)

func TestMain(m *testing.M) { os.Exit(azurite.RunMain(m)) }

func TestFileStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) blobsink.Store {
		s, err := blobsink.NewFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestAzureStore(t *testing.T) {
	conn := azurite.ConnString(t)
	client, err := (&storage.Config{ConnString: conn}).BlobClient()
	if err != nil {
		t.Fatal(err)
	}
	// One container for the whole suite: its tests name blobs apart.
	name := uniqueContainer(t)
	t.Cleanup(func() {
		_, _ = client.DeleteContainer(context.Background(), name, nil)
	})
	storetest.Run(t, func(t *testing.T) blobsink.Store {
		s, err := blobsink.NewAzureStore(t.Context(), client, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// uniqueContainer is a fresh container name: tests share one Azurite.
func uniqueContainer(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

func TestFileStoreRejectsNames(t *testing.T) {
	root := t.TempDir()
	s, err := blobsink.NewFileStore(filepath.Join(root, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, name := range []string{
		"", "../x", "a/../../x", "/etc/passwd", "a//b.log", "a/./b.log", ".hidden", "svc/.x.log.meta",
		"svc/.tmp/000001.log", `svc\2026\000001.log`, "a/b/",
	} {
		if err := s.Create(ctx, name, nil); err == nil || errors.Is(err, blobsink.ErrExists) {
			t.Errorf("Create(%q) = %v, want a refusal", name, err)
		}
		if err := s.Append(ctx, name, 0, []byte("x")); err == nil || errors.Is(err, blobsink.ErrNotFound) {
			t.Errorf("Append(%q) = %v, want a refusal", name, err)
		}
		if _, err := s.Open(ctx, name); err == nil {
			t.Errorf("Open(%q) succeeded", name)
		}
	}
	// Nothing escaped the root.
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files appeared beside the store's root: %v", entries)
	}
}

// TestFileStoreListStaysInRoot: a prefix whose folders climb out of the
// root (or name a hidden or dot folder) is refused; a file beside the root
// whose name the prefix would match is never listed.
func TestFileStoreListStaysInRoot(t *testing.T) {
	root := t.TempDir()
	s, err := blobsink.NewFileStore(filepath.Join(root, "blobs", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := os.WriteFile(filepath.Join(root, "secret.log"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "svc/2026/11/21/1800/000001.log", nil); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"../../secret", "../../", "svc/../../../secret", "/../../secret", "svc//2026", "./svc", `svc\..\../x`, ".hidden/x"} {
		var names []string
		err := s.List(ctx, prefix, func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil })
		if err == nil || len(names) > 0 {
			t.Errorf("List(%q) = %q, %v; want a refusal and nothing listed", prefix, names, err)
		}
	}
	for _, prefix := range []string{"", "s", "svc/", "svc/2026/11/21/18", ".."} {
		var names []string
		if err := s.List(ctx, prefix, func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil }); err != nil {
			t.Errorf("List(%q): %v", prefix, err)
		}
		if want := prefix != ".."; (len(names) == 1) != want {
			t.Errorf("List(%q) = %q", prefix, names)
		}
	}
}

func TestFileStoreListSkipsSidecars(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.Create(ctx, "svc/2026/11/21/1800/000001.log", map[string]string{"LogVersion": "1.0"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := s.List(ctx, "", func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "svc/2026/11/21/1800/000001.log" {
		t.Errorf("List = %q, want only the blob, no metadata sidecar", names)
	}
}

func TestFileStoreTruncate(t *testing.T) {
	s, err := blobsink.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, name := t.Context(), "svc/2026/11/21/1800/000001.log"
	if err := s.Create(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, name, 0, []byte("whole\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, name, 6, []byte("torn bl")); err != nil {
		t.Fatal(err)
	}
	// Recovery drops the torn block and appends again at the cut.
	if err := s.Truncate(ctx, name, 6); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, name, 6, []byte("again\n")); err != nil {
		t.Fatalf("Append at the truncated size: %v", err)
	}
	r, err := s.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, _ := io.ReadAll(r)
	if string(got) != "whole\nagain\n" {
		t.Errorf("content %q, want %q", got, "whole\nagain\n")
	}
	if err := s.Truncate(ctx, "../x", 0); err == nil {
		t.Error("Truncate(../x) succeeded")
	}
}

// BenchmarkFileAppend measures fsync'd appends into the embedded store.
func BenchmarkFileAppend(b *testing.B) {
	for _, size := range []int{1 << 20, 4 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			s, err := blobsink.NewFileStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			benchAppend(b, s, size, nil)
		})
	}
}

// benchAppend appends size-byte blocks, starting a new blob every 64 MiB and
// handing the finished one to drop (to keep an in-memory Azurite small).
func benchAppend(b *testing.B, s blobsink.Store, size int, drop func(name string)) {
	ctx := b.Context()
	block := make([]byte, size)
	_, _ = rand.Read(block)
	const perBlob = 64 << 20
	var (
		seq  int
		name string
		off  int64
	)
	next := func() {
		if name != "" && drop != nil {
			drop(name)
		}
		seq++
		name = blobsink.BlobName("bench/2026/11/21/1800", seq, blobsink.CompressNone)
		off = 0
		if err := s.Create(ctx, name, nil); err != nil {
			b.Fatal(err)
		}
	}
	next()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		if off+int64(size) > perBlob {
			b.StopTimer()
			next()
			b.StartTimer()
		}
		if err := s.Append(ctx, name, off, block); err != nil {
			b.Fatal(err)
		}
		off += int64(size)
	}
	benchcpu.Report(b, cpu, 1, "op")
}
