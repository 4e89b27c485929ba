package blobsink

import (
	"bytes"
	"io"
	"testing"
)

// TestPiecesReader: the pieces read as one stream, whatever the read
// size, and again after seeking back, as the SDK does to resend a body.
func TestPiecesReader(t *testing.T) {
	pieces := [][]byte{[]byte("abc"), nil, []byte("de"), []byte("fghij")}
	want := bytes.Join(pieces, nil)
	f := func(bufSize int) {
		t.Helper()
		r := newPiecesReader(pieces)
		if n, err := r.Seek(0, io.SeekEnd); err != nil || n != int64(len(want)) {
			t.Fatalf("Seek to the end = %d, %v; want %d", n, err, len(want))
		}
		for range 2 {
			if _, err := r.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			var got []byte
			buf := make([]byte, bufSize)
			for {
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil || n == 0 {
					t.Fatalf("Read = %d, %v", n, err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %q %d bytes at a time, want %q", got, bufSize, want)
			}
		}
		r.Seek(4, io.SeekStart)
		buf := make([]byte, bufSize)
		n, _ := r.Read(buf)
		if !bytes.Equal(buf[:n], want[4:4+min(n, len(want)-4)]) || n == 0 {
			t.Fatalf("after seeking to 4, read %q", buf[:n])
		}
	}
	for _, size := range []int{1, 2, 4, 7, 100} {
		f(size)
	}
}
