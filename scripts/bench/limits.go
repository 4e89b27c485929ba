package main

import (
	"fmt"
	"os"
	"time"

	"github.com/valyala/fasthttp"
)

// serveDiscard is the bare receiver the limits row measures: fasthttp reads
// each whole body, the handler drops it and answers 202. It runs in a
// process of its own (this binary re-executed) so its CPU is its own.
func serveDiscard(addr string) {
	s := &fasthttp.Server{
		Handler:            func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusAccepted) },
		MaxRequestBodySize: 64 << 20,
		Name:               "discard",
	}
	check(s.ListenAndServe(addr))
}

// limits measures what this machine allows for the low-cost body: the bare
// receiver with the same client, and one core copying the bytes.
func (b *bench) limits() {
	body := lowCostBody(b.o.lowEvents, time.Now())
	self, err := os.Executable()
	check(err)
	addr := freeAddr()
	p, err := startProc(nil, self, "--discard-server", addr)
	check(err)
	defer p.stop()
	check(p.waitHTTP("http://"+addr+"/", false))
	l := load{addr: addr, uri: "http://" + addr + "/v1/logs", body: body, events: b.o.lowEvents, conns: b.o.lowConns, duration: b.o.duration}
	out, _ := measure(l, p.pid())
	b.add("limit: fasthttp, read and discard", "a bare fasthttp server (scripts/bench) reading each body and answering 202, with the low-cost client", out)

	b.add("limit: memcpy", fmt.Sprintf("one core copying the low-cost body (%d B) over and over", len(body)), memcpyRate(body, l.events, min(b.o.duration, 3*time.Second)))
}

// memcpyRate copies body into a buffer as often as it can for d and
// returns the events per second that makes.
func memcpyRate(body []byte, events int, d time.Duration) result {
	dst := make([]byte, len(body))
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for range 64 {
			copy(dst, body)
		}
		n += 64
	}
	secs := time.Since(start).Seconds()
	return result{answered: float64(n) * float64(events) / secs, mbps: float64(n) * float64(len(body)) / secs / 1e6}
}
