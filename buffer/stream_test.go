package buffer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestStreamRegistryIsChecked(t *testing.T) {
	sink := newMemSink()
	f := func(defs []StreamDef, want string) {
		t.Helper()
		b, err := Open(context.Background(), testConfig(AckMemory), t.TempDir(), defs, nil, quiet)
		if err == nil {
			b.Close(context.Background())
			t.Fatalf("Open accepted %+v", defs)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Open(%+v): %v, want it to say %q", defs, err, want)
		}
	}
	f(nil, "without a stream")
	f([]StreamDef{{ID: 1, Name: "logins", Flusher: sink}}, "in id order")
	f([]StreamDef{{ID: 0, Name: "logs", Flusher: sink}, {ID: 1, Name: "logs", Flusher: sink}}, "a name of its own")
	f([]StreamDef{{ID: 0, Flusher: sink}}, "a name of its own")
	f([]StreamDef{{ID: 0, Name: "logs"}}, "without a flusher")
	f([]StreamDef{{ID: 0, Name: "logs", Flusher: sink, FlushBytes: -1}}, "positive size")
}

// tallyObserver records the tallies of the groups it is shown.
type tallyObserver struct {
	mu   sync.Mutex
	seen map[string]int // key -> events of Tally[1]
}

func (o *tallyObserver) Observe(g *Group) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen[string(g.Key)] += g.Tally[1]
}

// TestObserverSeesAcceptedGroups: a stream's observer sees each group of
// every accepted batch once, and nothing of a refused one or of another
// stream.
func TestObserverSeesAcceptedGroups(t *testing.T) {
	for _, ack := range []AckMode{AckWAL, AckMemory, AckFlush} {
		t.Run(string(ack), func(t *testing.T) {
			obs := &tallyObserver{seen: map[string]int{}}
			cfg := testConfig(ack)
			b, err := Open(context.Background(), cfg, t.TempDir(), []StreamDef{
				{ID: StreamLogs, Name: "logs", Flusher: newMemSink(), Observer: obs},
				{ID: StreamLogins, Name: "logins", Flusher: newMemSink()},
			}, nil, quiet)
			if err != nil {
				t.Fatal(err)
			}
			add := func(key string, events int, s Stream) error {
				var batch Batch
				g := batch.Group(s, []byte(key))
				for i := range events {
					g.Data = fmt.Appendf(g.Data, "line %d\n", i)
					g.Tally[1]++
				}
				return b.Add(context.Background(), &batch)
			}
			for _, tc := range []struct {
				key    string
				events int
				s      Stream
			}{{"a", 3, StreamLogs}, {"b", 2, StreamLogs}, {"a", 4, StreamLogs}, {"c", 5, StreamLogins}} {
				if err := add(tc.key, tc.events, tc.s); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := add("d", 1, StreamLogs); err == nil {
				t.Fatal("Add after Close succeeded")
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if want := map[string]int{"a": 7, "b": 2}; fmt.Sprint(obs.seen) != fmt.Sprint(want) {
				t.Fatalf("observed %v, want %v", obs.seen, want)
			}
		})
	}
}
