package query_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"ingest/blobsink"
	"ingest/logline"
	"ingest/query"
)

func ExampleRun() {
	dir, _ := os.MkdirTemp("", "query-example")
	defer os.RemoveAll(dir)
	store, _ := blobsink.NewFileStore(dir)
	ctx := context.Background()

	// What the sink writes: one line per event under the event's hour.
	t0 := time.Date(2026, 11, 21, 18, 4, 5, 0, time.UTC)
	var block []byte
	var meta blobsink.Meta
	for i, lvl := range []logline.Level{logline.LevelInfo, logline.LevelError, logline.LevelWarn} {
		e := logline.Event{Time: t0.Add(time.Duration(i) * time.Minute).UnixNano(), Level: lvl, Service: []byte("api"),
			Host: []byte("web-1"), ID: []byte(fmt.Sprint("id", i)), Message: []byte("disk full"), Attrs: []byte(`{"code":507}`)}
		block = logline.AppendLine(block, &e)
		meta = meta.Merge(blobsink.EventMeta(e.Time, lvl))
	}
	name := blobsink.BlobName(blobsink.HourPrefix("api", t0), 1, blobsink.CompressNone)
	_ = store.Create(ctx, name, nil)
	_ = store.Append(ctx, name, 0, block)
	_ = store.SetMetadata(ctx, name, meta.Map())

	from, _ := query.ParseTime("2026-11-21T18:00:00Z", t0)
	to, _ := query.ParseTime("+1h", from)
	q := query.Query{Services: query.ParseServices("api"), From: from, To: to, Level: logline.LevelWarn}
	var buf []byte
	st, err := query.Run(ctx, store, q, func(line []byte, e *logline.Event) error {
		buf = query.AppendNDJSON(buf[:0], e)
		_, err := os.Stdout.Write(buf)
		return err
	})
	fmt.Println(st.BlobsRead, st.LinesScanned, st.LinesMatched, err)
	// Output:
	// {"ts":"2026-11-21T18:05:05.0000000Z","level":"error","service":"api","host":"web-1","id":"id1","message":"disk full","code":507}
	// {"ts":"2026-11-21T18:06:05.0000000Z","level":"warn","service":"api","host":"web-1","id":"id2","message":"disk full","code":507}
	// 1 3 2 <nil>
}
