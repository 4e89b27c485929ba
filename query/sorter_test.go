package query

import (
	"bytes"
	"testing"
)

// addTimed adds a line of n bytes (its newline included) of time t.
func addTimed(s *sorter, t int64, n int) {
	li := lineInfo{t: t}
	s.add(bytes.Repeat([]byte{'x'}, n-1), &li)
}

func TestSorterReusesHandedOutSlabs(t *testing.T) {
	s := newSorter(16 * slabSize)
	const line = 1000
	next := int64(0)
	// Lines handed out as they come, a few behind: the buffer must keep
	// writing the same few slabs, never reaching its budget.
	for range 20 * slabSize / line {
		if !s.fits(line) {
			t.Fatalf("the buffer filled up (%d bytes in %d slabs) although lines were handed out", s.bytes(), len(s.slabs))
		}
		addTimed(&s, next, line)
		next++
		if len(s.recs) > 2*slabSize/line {
			s.sortByTime()
			s.drop(slabSize / line)
		}
	}
	if len(s.slabs) > 4 {
		t.Fatalf("%d slabs made for about 2 slabs of lines live at a time", len(s.slabs))
	}
	for i := range s.recs[1:] {
		if got, want := s.recs[i+1].info.t, s.recs[i].info.t+1; got != want {
			t.Fatalf("line %d has time %d, want %d", i+1, got, want)
		}
	}
	for i := range s.recs {
		if l := s.line(i); len(l) != line || l[line-1] != '\n' {
			t.Fatalf("line %d: %d bytes, ends %q", i, len(l), l[len(l)-1])
		}
	}
}

func TestSorterBudget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		budget, len int
	}{
		{"small lines", 4 * slabSize, 200},
		{"lines that leave a slab's end unused", 3 * slabSize, 300_001},
		{"a budget under a slab", slabSize / 2, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSorter(tc.budget)
			n := 0
			for s.fits(tc.len) {
				addTimed(&s, int64(-n), tc.len)
				n++
			}
			if n == 0 || s.bytes() > tc.budget && n > 1 {
				t.Fatalf("%d lines took %d bytes of a %d budget", n, s.bytes(), tc.budget)
			}
			s.sortByTime()
			if s.recs[0].info.t != int64(1-n) || s.oldest != int64(1-n) {
				t.Fatalf("oldest after sorting: %d (noted %d), want %d", s.recs[0].info.t, s.oldest, 1-n)
			}
			// The line left is the first added: its slab and the one
			// being filled stay, every other one is spare.
			s.drop(n - 1)
			if s.bytes() > 2*max(s.slab, tc.len)+recSize {
				t.Fatalf("one line left holds %d bytes", s.bytes())
			}
			s.reset()
			if s.bytes() != 0 || len(s.spare) != len(s.slabs) {
				t.Fatalf("after reset: %d bytes, %d spare of %d slabs", s.bytes(), len(s.spare), len(s.slabs))
			}
		})
	}
}

func TestSorterLetsLongLinesGo(t *testing.T) {
	s := newSorter(16 * slabSize)
	addTimed(&s, 1, 100)
	addTimed(&s, 2, 3*slabSize)
	addTimed(&s, 3, 100)
	big := s.recs[1].slab
	if cap(s.slabs[big]) < 3*slabSize {
		t.Fatalf("the long line's slab holds %d bytes", cap(s.slabs[big]))
	}
	s.drop(2)
	if s.slabs[big] != nil {
		t.Fatal("the long line's slab is kept after its line was handed out")
	}
	if got := s.line(0); len(got) != 100 || s.recs[0].info.t != 3 {
		t.Fatalf("the line left is %d bytes of time %d", len(got), s.recs[0].info.t)
	}
	addTimed(&s, 4, 100)
	addTimed(&s, 5, 2*slabSize)
	if cap(s.slabs[s.cur]) < 2*slabSize {
		t.Fatalf("a spare slab too small was filled: %d bytes for a %d-byte line", cap(s.slabs[s.cur]), 2*slabSize)
	}
}

// TestSorterRefillsAFullSlabLeftEmpty: the slab being filled, full, whose
// lines have all been handed out, is written again: a buffer at its budget
// has room for the next line.
func TestSorterRefillsAFullSlabLeftEmpty(t *testing.T) {
	s := newSorter(1 << 20)
	s.budget = 2*s.slab + 1000*recSize
	const line = 1000
	per := s.slab / line
	for i := range per {
		addTimed(&s, int64(1000+i), line) // the first slab: newer lines
	}
	for i := range per {
		addTimed(&s, int64(i), line) // the second: older, handed out first
	}
	if s.fits(line) {
		t.Fatalf("two full slabs and a third in a budget of two: fits")
	}
	s.sortByTime()
	s.drop(per)
	if !s.fits(line) {
		t.Fatalf("the full slab being filled has no line left, yet a line does not fit (%d bytes of %d)", s.bytes(), s.budget)
	}
	addTimed(&s, 5000, line)
	if len(s.slabs) != 2 || s.bytes() > s.budget {
		t.Fatalf("%d slabs, %d bytes of a %d budget", len(s.slabs), s.bytes(), s.budget)
	}
}
