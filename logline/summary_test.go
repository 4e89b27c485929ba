package logline

import "testing"

func TestSummary(t *testing.T) {
	type ev struct {
		t int64
		l Level
	}
	for _, tc := range []struct {
		name string
		evs  []ev
		want Summary
	}{
		{"none", nil, Summary{}},
		{"one, kept to 100 ns", []ev{{1234, LevelInfo}}, Summary{Start: 1200, End: 1200, Levels: LevelSet(0).Add(LevelInfo), Count: 1, ByLevel: byLevel(LevelInfo, 1), LateKnown: true}},
		{"before 1970, kept to 100 ns", []ev{{-1, LevelInfo}}, Summary{Start: -100, End: -100, Levels: LevelSet(0).Add(LevelInfo), Count: 1, ByLevel: byLevel(LevelInfo, 1), LateKnown: true}},
		{"in order", []ev{{100, LevelInfo}, {200, LevelWarn}, {200, LevelInfo}}, Summary{Start: 100, End: 200, Levels: LevelSet(0).Add(LevelInfo).Add(LevelWarn), Count: 3, ByLevel: byLevel(LevelInfo, 2, LevelWarn, 1), LateKnown: true}},
		{"late by the most behind the newest", []ev{{500, LevelError}, {300, LevelError}, {900, LevelError}, {600, LevelError}, {400, LevelError}},
			Summary{Start: 300, End: 900, Levels: LevelSet(0).Add(LevelError), Count: 5, ByLevel: byLevel(LevelError, 5), Late: 500, LateKnown: true}},
		{"no level names none", []ev{{100, LevelNone}, {100, LevelDebug}}, Summary{Start: 100, End: 100, Levels: LevelSet(0).Add(LevelDebug), Count: 2, ByLevel: byLevel(LevelNone, 1, LevelDebug, 1), LateKnown: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Summary
			for _, e := range tc.evs {
				s.Add(e.t, e.l)
			}
			if s != tc.want {
				t.Fatalf("Add: %+v, want %+v", s, tc.want)
			}
			// Any split into two runs stored one after the other merges
			// into the same summary.
			for cut := range len(tc.evs) + 1 {
				var a, b Summary
				for _, e := range tc.evs[:cut] {
					a.Add(e.t, e.l)
				}
				for _, e := range tc.evs[cut:] {
					b.Add(e.t, e.l)
				}
				if got := a.Merge(b); got != tc.want {
					t.Fatalf("Merge of the first %d and the rest: %+v, want %+v", cut, got, tc.want)
				}
			}
		})
	}
}

// byLevel is a Summary's ByLevel from level, count pairs.
func byLevel(pairs ...any) (out [NumLevels]int64) {
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(Level)] = int64(pairs[i+1].(int))
	}
	return out
}
