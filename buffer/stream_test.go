package buffer

import (
	"context"
	"strings"
	"testing"
	"time"
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
	f([]StreamDef{{ID: 0, Name: "logs", Flusher: sink, FlushAge: -time.Second}}, "positive durations")
	f([]StreamDef{{ID: 0, Name: "logs", Flusher: sink, FlushQuiet: -time.Second}}, "positive durations")
}

// TestKeyDue: when a key has a chunk to flush, by its stream's chunk size,
// flush age and quiet rule.
func TestKeyDue(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	withQuiet := &stream{StreamDef: StreamDef{FlushBytes: 100, FlushAge: 10 * time.Second, FlushQuiet: time.Second}}
	noQuiet := &stream{StreamDef: StreamDef{FlushBytes: 100, FlushAge: 10 * time.Second}}
	young := func(n int) *chunk { return &chunk{data: make([]byte, n), since: ago(2 * time.Second)} }
	for _, c := range []struct {
		name       string
		s          *stream
		chunks     []*chunk
		lastActive time.Duration // ago
		want       bool
	}{
		{"nothing pending", withQuiet, nil, time.Minute, false},
		{"young chunk, bytes still coming", withQuiet, []*chunk{young(10)}, 0, false},
		{"young chunk, quiet just under the rule", withQuiet, []*chunk{young(10)}, 999 * time.Millisecond, false},
		{"young chunk, quiet for the rule", withQuiet, []*chunk{young(10)}, time.Second, true},
		{"young chunk, quiet, no quiet rule", noQuiet, []*chunk{young(10)}, 5 * time.Second, false},
		{"oldest byte at the flush age", withQuiet, []*chunk{{data: make([]byte, 10), since: ago(10 * time.Second)}}, 0, true},
		{"a full chunk", withQuiet, []*chunk{young(100)}, 0, true},
		{"a chunk behind another", noQuiet, []*chunk{young(60), young(60)}, 0, true},
	} {
		kb := &keyBuf{chunks: c.chunks, lastActive: ago(c.lastActive)}
		if got := kb.due(now, c.s); got != c.want {
			t.Errorf("%s: due = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFlushAge(t *testing.T) {
	wal := Config{Ack: AckWAL, FlushInterval: 2 * time.Second}
	flush := Config{Ack: AckFlush, FlushInterval: 2 * time.Second}
	for _, c := range []struct {
		name      string
		cfg       Config
		ask, want time.Duration
	}{
		{"not set", wal, 0, 2 * time.Second},
		{"its own age", wal, 10 * time.Second, 10 * time.Second},
		{"shorter than --flush-interval", wal, time.Second, time.Second},
		{"--ack flush: no longer than --flush-interval", flush, 10 * time.Second, 2 * time.Second},
		{"--ack flush, shorter", flush, time.Second, time.Second},
	} {
		if got := flushAge(&c.cfg, c.ask); got != c.want {
			t.Errorf("%s: flushAge = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAckFlushIgnoresALongerFlushAge: with --ack flush, a request waiting
// for a stream whose flush age is an hour (and no quiet rule) is answered
// once its batch is stored, within --flush-interval, not after
// --ack-timeout.
func TestAckFlushIgnoresALongerFlushAge(t *testing.T) {
	sink := newMemSink()
	cfg := testConfig(AckFlush)
	cfg.AckTimeout = time.Minute
	streams := streamsOf(newMemSink(), sink)
	streams[StreamLogins].FlushAge = time.Hour
	b, err := Open(context.Background(), cfg, t.TempDir(), streams, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	var batch Batch
	g := batch.Group(StreamLogins, []byte("day"))
	g.Data = append(g.Data, "attempt\n"...)
	if err := b.Add(context.Background(), &batch); err != nil {
		t.Fatalf("Add with --ack flush: %v", err)
	}
	if got := sink.get("day"); got != "attempt\n" {
		t.Fatalf("Add returned before the batch was stored: the sink holds %q", got)
	}
}
