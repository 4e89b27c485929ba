package jsonstr

import (
	"math/rand/v2"
	"testing"
)

// checkIndex compares Index.Scan with Scan at every quote of b, indexed as
// b and as a slice of a longer buffer whose bytes past len(b) are all
// quotes: Reset reads past the end then, and must not see them.
func checkIndex(t *testing.T, x *Index, b []byte) {
	t.Helper()
	long := make([]byte, len(b), len(b)+64)
	copy(long, b)
	for k := len(b); k < cap(long); k++ {
		long[:cap(long)][k] = '"'
	}
	exact := append(make([]byte, 0, len(b)), b...)
	for _, in := range [][]byte{exact, long} {
		x.Reset(in)
		for i, c := range in {
			if c != '"' {
				continue
			}
			end, fl := x.Scan(i)
			if wantEnd, wantFl := Scan(in, i); end != wantEnd || fl != wantFl {
				t.Fatalf("Index.Scan(%d) of %q (cap %d) = %d, %b; Scan gives %d, %b", i, in, cap(in), end, fl, wantEnd, wantFl)
			}
		}
	}
}

// TestIndexScan reads random lines of every length up to three blocks and
// a half, made of the bytes that matter (quotes, backslashes, control and
// high bytes, a valid rune) among plain ones, with and without vector
// marking.
func TestIndexScan(t *testing.T) {
	alphabet := []string{`"`, `"`, `\`, "a", "b", " ", "\x01", "\xff", "é", "0123456789abcdef"}
	r := rand.New(rand.NewPCG(1, 2))
	for _, marking := range []bool{canMark, false} {
		t.Run(map[bool]string{true: "marks", false: "scan"}[marking], func(t *testing.T) {
			defer func(was bool) { canMark = was }(canMark)
			canMark = marking
			var x Index
			for n := 0; n < 224; n++ {
				for range 20 {
					var b []byte
					for len(b) < n {
						b = append(b, alphabet[r.IntN(len(alphabet))]...)
					}
					checkIndex(t, &x, b[:n])
				}
			}
		})
	}
}

// TestIndexScanAcrossBlocks puts a string's closing quote, and a byte
// that needs Scan, at every place around the block boundaries.
func TestIndexScanAcrossBlocks(t *testing.T) {
	var x Index
	for n := 1; n < 200; n++ {
		for _, stop := range []byte{'"', '\\', 0x1f, 0x80, 'x'} {
			b := make([]byte, n+2)
			for k := range b {
				b[k] = 'a'
			}
			b[0], b[n-1], b[len(b)-1] = '"', stop, '"'
			checkIndex(t, &x, b)
		}
	}
}

func FuzzIndex(f *testing.F) {
	for _, s := range []string{`{"a":"b","c":"d\"e"}`, "\"\xff\"\"", `"\\"`} {
		f.Add([]byte(s))
	}
	var x Index
	f.Fuzz(func(t *testing.T, b []byte) { checkIndex(t, &x, b) })
}

// TestIndexRelease: a pooled Index keeps the marks of an ordinary line
// and drops those of a huge one, and holds on to no buffer either way.
func TestIndexRelease(t *testing.T) {
	if !canMark {
		t.Skip("no marks without AVX2")
	}
	for _, tc := range []struct {
		n    int
		kept bool
	}{{300, true}, {1 << 20, false}} {
		var x Index
		x.Reset(make([]byte, tc.n))
		x.Release(256 << 10)
		if x.b != nil || (x.marks != nil) != tc.kept {
			t.Errorf("after Release of a %d-byte line: buffer kept %v, marks kept %v (want %v)", tc.n, x.b != nil, x.marks != nil, tc.kept)
		}
	}
}
