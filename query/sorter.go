package query

import "slices"

// slabSize is the unit the sort buffer grows by: fixed slabs instead of one
// growing slice, so the buffer never holds two copies while it grows and
// its slabs are reused from hour to hour.
const slabSize = 1 << 20

// rec locates one buffered line.
type rec struct {
	info lineInfo
	slab int32
	off  int32
	n    int32
}

const recSize = 48 // bytes of one rec (unsafe.Sizeof), counted against the budget

// sorter buffers matching lines, up to budget bytes (lines plus index), and
// hands them out in time order.
type sorter struct {
	budget  int
	slabs   [][]byte // slabs[:used] hold lines; the rest are spare
	used    int
	recs    []rec
	bytes   int   // line bytes plus index bytes buffered
	jumbled bool  // a line was added before an earlier-added later one
	oldest  int64 // the oldest time in recs
}

// fits reports whether a line of n bytes can be added without passing the
// budget. An empty buffer takes any line: a line is never dropped for size
// here (the line reader has already bounded it).
func (s *sorter) fits(n int) bool {
	return len(s.recs) == 0 || s.bytes+n+1+recSize <= s.budget
}

// add copies line (terminated by '\n' if it is not) into the buffer.
func (s *sorter) add(line []byte, li *lineInfo) {
	n := len(line)
	nl := n == 0 || line[n-1] != '\n'
	if nl {
		n++
	}
	if s.used == 0 || len(s.slabs[s.used-1])+n > cap(s.slabs[s.used-1]) {
		s.newSlab(n)
	}
	i := s.used - 1
	off := len(s.slabs[i])
	s.slabs[i] = append(s.slabs[i], line...)
	if nl {
		s.slabs[i] = append(s.slabs[i], '\n')
	}
	if k := len(s.recs); k > 0 && li.t < s.recs[k-1].info.t {
		s.jumbled = true
	}
	if len(s.recs) == 0 || li.t < s.oldest {
		s.oldest = li.t
	}
	s.recs = append(s.recs, rec{info: *li, slab: int32(i), off: int32(off), n: int32(n)})
	s.bytes += n + recSize
}

// newSlab makes a slab with room for n bytes current, reusing a spare one
// when it is large enough. A line larger than a slab gets a slab of its own,
// which is not kept for reuse.
func (s *sorter) newSlab(n int) {
	if s.used < len(s.slabs) && cap(s.slabs[s.used]) >= n {
		s.slabs[s.used] = s.slabs[s.used][:0]
		s.used++
		return
	}
	size := max(n, slabSize)
	if s.used < len(s.slabs) {
		s.slabs[s.used] = make([]byte, 0, size)
	} else {
		s.slabs = append(s.slabs, make([]byte, 0, size))
	}
	s.used++
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

// drop forgets the first n lines, handed out after sortByTime; their bytes
// stay counted until the buffer empties.
func (s *sorter) drop(n int) {
	if n == len(s.recs) {
		s.reset()
		return
	}
	s.recs = append(s.recs[:0], s.recs[n:]...)
	s.oldest = s.recs[0].info.t
}

func (s *sorter) reset() {
	for i := range s.used {
		if cap(s.slabs[i]) > slabSize {
			s.slabs[i] = nil // an oversized slab held one long line: let it go
		}
	}
	// Keep the spare slabs compact at the front.
	s.slabs = slices.DeleteFunc(s.slabs, func(b []byte) bool { return b == nil })
	s.used = 0
	s.recs = s.recs[:0]
	s.bytes = 0
	s.jumbled = false
}
