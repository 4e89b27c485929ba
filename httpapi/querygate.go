package httpapi

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
)

// Reads that scan storage (GET /v1/logs, its histograms, /v1/logins/{user}
// and /v1/services) take a slot of --max-concurrent-queries for as long as
// they run, a streamed answer until its last byte. A query already reads
// its blobs on every core (a read-ahead goroutine per open blob) and
// holds up to its --query-* memory bounds, so more at once would add
// memory and latency, not throughput. Past the limit a read waits up to
// queryWait for a slot (the page asks for a histogram and the events of a
// view at once), then gets 429 with Retry-After.

// DefaultMaxConcurrentQueries is the default of --max-concurrent-queries:
// about 8 x 40 MiB of query memory at most with the default --query-*
// bounds, and room for a page view (2 reads) and a loadtest verification
// (8 reads) at once after a short wait.
const DefaultMaxConcurrentQueries = 8

// queryWait is how long a read waits for a slot before its 429. A
// variable for tests.
var queryWait = 2 * time.Second

// queryGate bounds the reads that scan storage at once.
type queryGate struct {
	slots chan struct{}
}

func newQueryGate(n int) *queryGate { return &queryGate{slots: make(chan struct{}, n)} }

// enter takes a slot, waiting up to queryWait; false when none came free.
func (g *queryGate) enter() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(queryWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// leave gives a slot back.
func (g *queryGate) leave() { <-g.slots }

// enterQuery takes a query slot, or answers 429 and returns false; the
// caller gives the slot back with s.queries.leave once the read is over.
func (s *Server) enterQuery(ctx *fasthttp.RequestCtx) bool {
	if s.queries.enter() {
		return true
	}
	s.met.queriesRefused.Inc()
	writeError(ctx, &httperr.Error{Status: fasthttp.StatusTooManyRequests, RetryAfter: time.Second,
		Msg: fmt.Sprintf("cannot run the read: %d are running, the most --max-concurrent-queries allows; retry shortly, or raise --max-concurrent-queries", cap(s.queries.slots))})
	return false
}
