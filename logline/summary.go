package logline

// Summary is what a run of lines holds, taken in the order the lines are
// stored: their time range, levels, count and lateness. It is the typed
// core of a blob's metadata. The encoder's caller keeps one per run of
// lines as it writes them (Add), so that storing the run needs no second
// reading of its lines; runs stored one after the other Merge.
type Summary struct {
	Start, End int64 // earliest and latest line time, Unix ns, as lines store it (100 ns ticks)
	Levels     LevelSet
	Count      int64
	// ByLevel counts the lines per level (LevelNone: lines without one);
	// it adds up to Count for a Summary built from lines. Blob metadata
	// does not carry it: a Summary read back from there has none.
	ByLevel [NumLevels]int64
	// Late is the most, in ns, by which a line is older than the newest
	// line stored before it, when LateKnown: a reader that has seen lines
	// up to time t knows that every later line is from t-Late on, so it
	// can hand lines out in time order without reading further. Not known
	// for lines written before it was recorded, or for a Summary not built
	// from lines in their stored order.
	Late      int64
	LateKnown bool
}

// Add counts one more line, of time t (Unix ns) and level l, stored after
// the lines s already counts. Like a line, it keeps t to 100 ns and names
// no level for LevelNone.
func (s *Summary) Add(t int64, l Level) {
	t -= (t%100 + 100) % 100
	var set LevelSet
	if l != LevelNone {
		set = set.Add(l)
	}
	if l >= numLevels {
		l = LevelNone
	}
	if s.Count == 0 {
		*s = Summary{Start: t, End: t, Levels: set, Count: 1, LateKnown: true}
		s.ByLevel[l] = 1
		return
	}
	s.Late = max(s.Late, s.End-t)
	s.Start = min(s.Start, t)
	s.End = max(s.End, t)
	s.Levels |= set
	s.Count++
	s.ByLevel[l]++
}

// Merge returns s widened to cover o, whose lines are stored after s's.
func (s Summary) Merge(o Summary) Summary {
	if o.Count == 0 {
		return s
	}
	if s.Count == 0 {
		return o
	}
	// A line of o is older than s's newest by at most s.End-o.Start, and
	// that bound is reached by o's oldest line.
	s.Late = max(s.Late, o.Late, s.End-o.Start)
	s.LateKnown = s.LateKnown && o.LateKnown
	s.Start = min(s.Start, o.Start)
	s.End = max(s.End, o.End)
	s.Levels |= o.Levels
	s.Count += o.Count
	for l, n := range o.ByLevel {
		s.ByLevel[l] += n
	}
	return s
}
