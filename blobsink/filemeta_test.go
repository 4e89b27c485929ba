package blobsink

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ingest/internal/benchcpu"
)

func TestFileStoreMetadataSlots(t *testing.T) {
	ctx := context.Background()
	s, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	name := "svc/2026/11/21/1600/000001.log"
	p, _ := s.path(name)
	meta := func(n int) map[string]string { return map[string]string{MetaEventCount: strconv.Itoa(n)} }
	got := func() map[string]string {
		info, err := s.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info.Metadata
	}
	if err := s.Create(ctx, name, meta(0)); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 5; n++ {
		if err := s.SetMetadata(ctx, name, meta(n)); err != nil {
			t.Fatal(err)
		}
		if m := got(); !maps.Equal(m, meta(n)) {
			t.Fatalf("after write %d: %v", n, m)
		}
	}
	mp := metaPath(p)
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	// Write 5 (the sixth, generation 6) went to slot 1: tear it, and the
	// metadata is write 4's again.
	t.Run("TornSlot", func(t *testing.T) {
		torn := append([]byte(nil), b...)
		torn[metaSlotBytes+metaHeaderSize+2] ^= 0xff
		if err := os.WriteFile(mp, torn, 0o644); err != nil {
			t.Fatal(err)
		}
		if m := got(); !maps.Equal(m, meta(4)) {
			t.Fatalf("with the newest slot torn: %v, want %v", m, meta(4))
		}
		// The next write goes over the torn slot, not the good one.
		if err := s.SetMetadata(ctx, name, meta(7)); err != nil {
			t.Fatal(err)
		}
		if m := got(); !maps.Equal(m, meta(7)) {
			t.Fatalf("after writing over a torn slot: %v", m)
		}
	})
	t.Run("Legacy", func(t *testing.T) {
		if err := os.WriteFile(mp, []byte(`{"EventCount":"9"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if m := got(); !maps.Equal(m, meta(9)) {
			t.Fatalf("a plain JSON sidecar reads %v", m)
		}
		if err := s.SetMetadata(ctx, name, meta(10)); err != nil {
			t.Fatal(err)
		}
		if m := got(); !maps.Equal(m, meta(10)) {
			t.Fatalf("after replacing a plain JSON sidecar: %v", m)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".tmp-*")); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		err := s.SetMetadata(ctx, name, map[string]string{"Big": strings.Repeat("x", metaSlotBytes)})
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("SetMetadata of 8 KiB: %v", err)
		}
		if m := got(); !maps.Equal(m, meta(10)) {
			t.Fatalf("a refused write changed the metadata: %v", m)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		if err := os.Remove(mp); err != nil {
			t.Fatal(err)
		}
		if m := got(); len(m) != 0 {
			t.Fatalf("no sidecar reads %v", m)
		}
		if err := s.SetMetadata(ctx, name, meta(11)); err != nil {
			t.Fatal(err)
		}
		if m := got(); !maps.Equal(m, meta(11)) {
			t.Fatalf("a sidecar made anew reads %v", m)
		}
	})
}

// FuzzReadMeta: whatever a sidecar holds, reading it never fails the
// reader, and a slot written whole over it reads back.
func FuzzReadMeta(f *testing.F) {
	f.Add([]byte(`{"EventCount":"1"}`), false)
	f.Add(metaSlot(3, []byte(`{"a":"b"}`)), true)
	f.Add(append(make([]byte, metaSlotBytes), metaSlot(1, []byte(`{}`))...), false)
	f.Fuzz(func(t *testing.T, side []byte, second bool) {
		p := filepath.Join(t.TempDir(), "b.log")
		mp := metaPath(p)
		if err := os.WriteFile(mp, side, 0o644); err != nil {
			t.Fatal(err)
		}
		readMeta(p)
		want := map[string]string{"K": "v"}
		if second {
			want["K2"] = "w"
		}
		if _, err := writeMeta(p, want); err != nil {
			t.Fatal(err)
		}
		if got := readMeta(p); !maps.Equal(got, want) {
			t.Fatalf("wrote %v over %q, read %v", want, side, got)
		}
	})
}

func BenchmarkFileStoreSetMetadata(b *testing.B) {
	ctx := context.Background()
	s, err := NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	name := "svc/2026/11/21/1600/000001.log"
	if err := s.Create(ctx, name, Meta{}.Map()); err != nil {
		b.Fatal(err)
	}
	m := scanMeta(lines("svc", hour, 3, 3))
	b.ReportAllocs()
	cpu := benchcpu.Start()
	for b.Loop() {
		m.Count++
		if err := s.SetMetadata(ctx, name, m.Map()); err != nil {
			b.Fatal(err)
		}
	}
	benchcpu.Report(b, cpu, 1, "op")
}
