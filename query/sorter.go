package query

import "slices"

// slabSize is the unit the sort buffer grows by (less for a budget under
// 16 slabs): fixed slabs instead of one growing slice, so the buffer never
// holds two copies while it grows, and a slab whose lines are all handed out
// is written again while it is still in the CPU's cache.
const slabSize = 1 << 20

// rec locates one buffered line.
type rec struct {
	info lineInfo
	slab int32
	off  int32
	n    int32
}

const recSize = 48 // bytes of one rec (unsafe.Sizeof), counted against the budget

// sorter buffers matching lines, up to budget bytes (the slabs holding
// lines, plus the index), and hands them out in time order.
type sorter struct {
	budget int
	slab   int      // bytes of a slab
	slabs  [][]byte // by index; nil once an oversized one is let go
	live   []int32  // lines not yet handed out, per slab
	spare  []int32  // slabs with no live line, the last freed on top
	cur    int32    // the slab being filled; -1 before the first line
	inUse  int      // bytes of the slabs holding lines or being filled
	recs   []rec
	// jumbled: a line was added before an earlier-added later one.
	jumbled bool
	oldest  int64 // the oldest time in recs
}

func newSorter(budget int) sorter {
	return sorter{budget: budget, slab: min(slabSize, max(budget/16, 256)), cur: -1}
}

// bytes is what the buffer holds against its budget.
func (s *sorter) bytes() int { return s.inUse + len(s.recs)*recSize }

// fits reports whether a line of n bytes can be added without passing the
// budget. An empty buffer takes any line: a line is never dropped for size
// here (the line reader has already bounded it).
func (s *sorter) fits(n int) bool {
	if len(s.recs) == 0 {
		return true
	}
	grow := 0
	if s.cur < 0 || len(s.slabs[s.cur])+n+1 > cap(s.slabs[s.cur]) {
		grow = max(n+1, s.slab)
		if s.cur >= 0 && s.live[s.cur] == 0 {
			grow -= cap(s.slabs[s.cur]) // newSlab frees it first
		}
	}
	return s.bytes()+grow+recSize <= s.budget
}

// add copies line (terminated by '\n' if it is not) into the buffer.
func (s *sorter) add(line []byte, li *lineInfo) {
	n := len(line)
	nl := n == 0 || line[n-1] != '\n'
	if nl {
		n++
	}
	if s.cur < 0 || len(s.slabs[s.cur])+n > cap(s.slabs[s.cur]) {
		s.newSlab(n)
	}
	i := s.cur
	off := len(s.slabs[i])
	s.slabs[i] = append(s.slabs[i], line...)
	if nl {
		s.slabs[i] = append(s.slabs[i], '\n')
	}
	s.live[i]++
	if k := len(s.recs); k > 0 && li.t < s.recs[k-1].info.t {
		s.jumbled = true
	}
	if len(s.recs) == 0 || li.t < s.oldest {
		s.oldest = li.t
	}
	s.recs = append(s.recs, rec{info: *li, slab: i, off: int32(off), n: int32(n)})
}

// newSlab makes the slab being filled one with room for n bytes: the
// spare slab freed last, else a new one. A line larger than a slab gets a
// slab of its own, let go once its line is handed out.
func (s *sorter) newSlab(n int) {
	if c := s.cur; c >= 0 && s.live[c] == 0 {
		s.free(c)
	}
	if k := len(s.spare); k > 0 {
		s.cur = s.spare[k-1]
		s.spare = s.spare[:k-1]
	} else {
		s.cur = int32(len(s.slabs))
		s.slabs = append(s.slabs, nil)
		s.live = append(s.live, 0)
	}
	if cap(s.slabs[s.cur]) < n {
		s.slabs[s.cur] = make([]byte, 0, max(n, s.slab))
	}
	s.slabs[s.cur] = s.slabs[s.cur][:0]
	s.inUse += cap(s.slabs[s.cur])
}

// free makes slab i, which holds no live line, a spare.
func (s *sorter) free(i int32) {
	s.inUse -= cap(s.slabs[i])
	if cap(s.slabs[i]) > s.slab {
		s.slabs[i] = nil // it held one long line: let it go
	}
	s.spare = append(s.spare, i)
}

func (s *sorter) line(i int) []byte {
	r := s.recs[i]
	return s.slabs[r.slab][r.off : r.off+r.n]
}

// sortByTime orders the lines by time, keeping merge order for equal times.
// The merged lines are usually sorted already (add noted whether they are).
func (s *sorter) sortByTime() {
	if !s.jumbled {
		return
	}
	slices.SortStableFunc(s.recs, func(a, b rec) int {
		switch {
		case a.info.t < b.info.t:
			return -1
		case a.info.t > b.info.t:
			return 1
		}
		return 0
	})
	s.jumbled = false
}

// drop forgets the first n lines, handed out after sortByTime. A slab none
// of whose lines is left, other than the one being filled, is spare again.
func (s *sorter) drop(n int) {
	if n == len(s.recs) {
		s.reset()
		return
	}
	for _, r := range s.recs[:n] {
		if s.live[r.slab]--; s.live[r.slab] == 0 && r.slab != s.cur {
			s.free(r.slab)
		}
	}
	s.recs = append(s.recs[:0], s.recs[n:]...)
	s.oldest = s.recs[0].info.t
}

// reset empties the buffer, keeping its slabs as spares.
func (s *sorter) reset() {
	s.spare = s.spare[:0]
	for i := len(s.slabs) - 1; i >= 0; i-- {
		if cap(s.slabs[i]) > s.slab {
			s.slabs[i] = nil
		}
		s.live[i] = 0
		s.spare = append(s.spare, int32(i)) // slab 0 on top: it was filled first
	}
	s.cur = -1
	s.inUse = 0
	s.recs = s.recs[:0]
	s.jumbled = false
}
