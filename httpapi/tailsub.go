package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"time"

	"ingest/intake"
	"ingest/logline"
	"ingest/query"
)

// liveTail is what the Loki tail takes of the live tail (tail.go): the log
// events this server accepts from now on, for some services.
type liveTail interface {
	// follow subscribes to the events of services (their stored names;
	// nil for every service). It fails when the server is shutting down.
	follow(services []string) (liveSub, error)
}

// liveSub is one subscription to the live tail.
type liveSub interface {
	// next waits up to idle for accepted events and calls fn with each
	// (valid during the call only). It returns the events lost since the
	// last call because the subscriber fell behind, and false once the
	// subscription has ended (shutdown).
	next(idle time.Duration, fn func(*logline.Event)) (dropped int64, open bool)
	// close ends the subscription.
	close()
}

// hubTail is the server's tail hub as a liveTail.
type hubTail struct{ s *Server }

func (h hubTail) follow(services []string) (liveSub, error) {
	r := newTailReader()
	r.all = services == nil
	if !r.all {
		r.services = map[string]bool{}
		for _, svc := range services {
			r.services[svc] = true
		}
	}
	if err := h.s.addTail(r); err != nil {
		return nil, err
	}
	h.s.met.tailReaders.Inc()
	sub := &hubSub{s: h.s, r: r, idle: time.NewTimer(time.Hour), stopPeers: func() {}}
	if h.s.deps.Cluster != nil {
		// The other instances' events too, as GET /v1/tail follows them.
		service := "*"
		if services != nil {
			service = strings.Join(services, ",")
		}
		var ctx context.Context
		ctx, sub.stopPeers = context.WithCancel(context.Background())
		query := url.Values{"service": {service}, "local": {"1"}}.Encode()
		h.s.goGuarded("/loki/api/v1/tail", func() { h.s.followPeers(ctx, r, query) })
	}
	return sub, nil
}

// hubSub is one reader of the tail hub.
type hubSub struct {
	s         *Server
	r         *tailReader
	idle      *time.Timer
	ev        logline.Event
	once      sync.Once
	stopPeers context.CancelFunc // ends the streams from the other instances
}

func (h *hubSub) next(idle time.Duration, fn func(*logline.Event)) (int64, bool) {
	h.idle.Reset(idle)
	defer h.idle.Stop()
	select {
	case <-h.r.done:
		return h.r.dropped.Swap(0), false
	case <-h.idle.C:
	case c := <-h.r.queue:
		defer c.finish()
		defer h.r.held.Add(-int64(len(c.data)))
		for data := c.data; len(data) > 0; {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i+1], data[i+1:]
			} else {
				data = nil
			}
			if logline.Parse(line, &h.ev) == nil {
				fn(&h.ev)
			}
		}
	case c := <-h.r.peers:
		h.peerLines(c.data, fn)
		c.finish()
	}
	return h.r.dropped.Swap(0), true
}

// peerLines hands fn the events of a chunk of another instance's tail,
// NDJSON answer lines read back as events; its drop markers add to the
// subscriber's own count.
func (h *hubSub) peerLines(data []byte, fn func(*logline.Event)) {
	p := intake.GetParser()
	defer intake.PutParser(p)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		switch query.ControlKind(line) {
		case "":
			if len(bytes.TrimSpace(line)) > 0 {
				p.ParseLogs(line, intake.FormatNDJSON, intake.Defaults{}, func(e *logline.Event) error { fn(e); return nil })
			}
		case "dropped":
			var m struct{ Dropped int64 }
			if json.Unmarshal(line, &m) == nil && m.Dropped > 0 {
				h.r.dropped.Add(m.Dropped)
			}
		}
	}
}

func (h *hubSub) close() {
	h.once.Do(func() {
		h.stopPeers()
		h.s.tail.remove(h.r)
		h.r.drain()
		h.s.met.tailReaders.Dec()
	})
}
