package group_test

import (
	"context"
	"fmt"

	"ingest/admission"
	"ingest/intake"
	"ingest/intake/group"
)

// A request's path through a Grouper: the decoder emits every row into
// AddEvent, the batch is grouped per service and hour, and a row over a
// cap is rejected alone.
func Example() {
	cfg := group.DefaultConfig()
	cfg.MaxServiceHoursPerRequest = 2
	pool, err := group.NewPool(cfg, nil) // nil: no login attempts here
	if err != nil {
		panic(err)
	}
	var hold admission.Hold // the request's share of --max-inflight-bytes
	hold.Begin(admission.New(64<<20, "request bytes in flight", "--max-inflight-bytes"), context.Background(), 0)
	defer hold.Release()
	g := pool.Get(&hold)
	defer pool.Put(g)

	body := []byte(`{"service":"api","ts":"2026-11-21T18:04:05Z","msg":"a"}
{"service":"api","ts":"2026-11-21T18:59:00Z","msg":"b"}
{"service":"web","ts":"2026-11-21T19:00:00Z","msg":"c"}
{"service":"db","ts":"2026-11-21T19:00:00Z","msg":"d"}
`)
	p := intake.GetParser()
	defer intake.PutParser(p)
	res, err := p.ParseLogs(body, intake.FormatNDJSON, intake.Defaults{MaxRows: pool.MaxEvents()}, g.AddEvent)
	if err != nil {
		panic(err) // the whole request: answer it
	}
	for _, gr := range g.Batch().Groups() {
		fmt.Printf("%s: %d events\n", gr.Key, gr.Events)
	}
	fmt.Println(string(res.AppendJSON(nil)))
	// Output:
	// api/2026/11/21/1800: 2 events
	// web/2026/11/21/1900: 1 events
	// {"accepted":3,"rejected":1,"errors":[{"line":4,"error":"cannot accept the event: the request already writes 2 services and hours (--max-service-hours-per-request counts a service once per UTC hour of its events); send it in another request, or raise the flag"}]}
}
