package intake_test

import (
	"fmt"
	"time"

	"ingest/intake"
	"ingest/internal/httperr"
	"ingest/logline"
)

func ExampleParser_ParseLogs() {
	body := []byte(`{"ts":"2026-11-21T18:04:05.5Z","level":"WARNING","host":"web-1","id":"e1","msg":"disk 93% full","disk":"/var"}
{"date":1763748245.25,"log":"GET /health 200","id":"e2"}
not json
`)
	f, err := intake.DetectFormat("application/x-ndjson", body, true)
	if err != nil {
		panic(err) // a *httperr.Error: answer with its Status
	}
	p := intake.GetParser()
	defer intake.PutParser(p)
	d := intake.Defaults{Service: []byte("api"), Now: time.Date(2026, 11, 21, 18, 5, 0, 0, time.UTC).UnixNano()}
	var line []byte
	res, err := p.ParseLogs(body, f, d, func(e *logline.Event) error {
		line = logline.AppendLine(line[:0], e) // e is only valid during the call
		fmt.Print(string(line))
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.AppendJSON(nil)))
	// Output:
	// 1.0;2026-11-21T18:04:05.5000000Z;warn;api;web-1;e1;"disk 93% full";{"disk":"/var"}
	// 1.0;2025-11-21T18:04:05.2500000Z;;api;;e2;"GET /health 200";{}
	// {"accepted":2,"rejected":1,"errors":[{"line":3,"error":"cannot parse JSON: unexpected 'n' at byte 1, want '{'"}]}
}

func ExampleDecompress() {
	raw, err := intake.Decompress(nil, []byte("plain body"), "identity", 1<<20, nil)
	fmt.Printf("%s %v\n", raw, err)
	_, err = intake.Decompress(nil, []byte("x"), "br", 1<<20, nil)
	fmt.Println(httperr.StatusOf(err), err)
	// Output:
	// plain body <nil>
	// 415 cannot decode body: unknown Content-Encoding "br"; use gzip, zstd, deflate, snappy or identity
}
