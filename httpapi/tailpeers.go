package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"ingest/admission"
	"ingest/cluster"
)

// A tail without local=1 follows every other live instance's own tail
// (GET /v1/tail?...&local=1, with the selection it was given), so a client
// reaching any instance sees every event the cluster accepts, each once:
// an event is accepted, and published, by one instance only. The instance
// a client reached checks its token; its peers take the tail key each
// instance publishes in the cluster table (cluster.Member.TailKey).
//
// Cost per tail client: one long-lived request to each other instance,
// carrying only the events that match (filtered at the source), and no
// storage request: the membership it follows is read anyway. Latency is
// one hop: a peer writes an event to the stream when it accepts it.
//
// Each peer stream reads into a buffer of peerReadBytes and hands the
// reader one chunk of whole lines at a time, waiting until it is written:
// a reader that does not read stops its peer streams (the peers then drop
// events for them, with their own markers, which pass through), and each
// stream holds at most its two buffers, charged to the tail budget, plus a
// long line gathered up to tailQueueBytes, charged as it grows.

// tailPeerPoll is how often a tail looks for instances joining or leaving
// the membership (itself refreshed every --cluster-heartbeat). A variable
// for tests.
var tailPeerPoll = time.Second

// peerReadBytes is a peer stream's read buffer and the largest chunk it
// hands the reader.
const peerReadBytes = 64 << 10

// peerRetryMax bounds the wait between attempts to follow a peer that does
// not answer.
const peerRetryMax = 10 * time.Second

var errPeerBudget = errors.New("the tail budget is spent: raise --tail-budget-bytes")

// newPeerClient is the client of peer streams: no overall timeout (a
// stream lasts as long as its tail), but bounded connects and headers.
// With --tls-cert, peers are verified against the system's roots and this
// instance's own certificate chain (instances usually share one).
func newPeerClient(cfg Config) *http.Client {
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	if cfg.TLSCert != "" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if pem, err := os.ReadFile(cfg.TLSCert); err == nil {
			roots.AppendCertsFromPEM(pem)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr}
}

// followPeers follows the local tail of every other live instance for r
// until ctx ends, starting a stream for each instance that joins and
// stopping the stream of each that leaves.
func (s *Server) followPeers(ctx context.Context, r *tailReader, query string) {
	streams := map[cluster.Member]context.CancelFunc{}
	defer func() {
		for _, stop := range streams {
			stop()
		}
	}()
	t := time.NewTicker(s.tail.peerPoll)
	defer t.Stop()
	for {
		want := map[cluster.Member]bool{}
		for _, p := range s.deps.Cluster.Peers() {
			// A restart under the same id has a new tail key: a new stream.
			want[cluster.Member{ID: p.ID, URL: p.URL, TailKey: p.TailKey}] = true
		}
		for p, stop := range streams {
			if !want[p] {
				stop()
				delete(streams, p)
			}
		}
		for p := range want {
			if streams[p] == nil {
				c, stop := context.WithCancel(ctx)
				streams[p] = stop
				s.goGuarded("/v1/tail", func() { s.followPeer(c, r, p, query) })
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// followPeer follows one peer's local tail until ctx ends, reconnecting
// with backoff when the stream ends or fails.
func (s *Server) followPeer(ctx context.Context, r *tailReader, p cluster.Member, query string) {
	s.met.tailPeerStreams.Inc()
	defer s.met.tailPeerStreams.Dec()
	wait, warned := time.Second, false
	for {
		began := time.Now()
		err := s.streamPeer(ctx, r, p, query)
		select {
		case <-ctx.Done():
			return
		case <-r.done: // the client went away: ctx ends next
			return
		default:
		}
		s.met.tailPeerErrors.Inc()
		if !warned {
			s.deps.Log.Warn("cannot follow another instance's tail; its events are missing from this tail until it answers", "instance", p.ID, "url", p.URL, "err", err)
			warned = true
		}
		if time.Since(began) > peerRetryMax {
			wait = time.Second // it streamed for a while: a fresh failure
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, peerRetryMax)
	}
}

// streamPeer copies one stream of p's local tail to r, a chunk of whole
// lines at a time, until it ends or fails.
func (s *Server) streamPeer(ctx context.Context, r *tailReader, p cluster.Member, query string) (err error) {
	if !s.tail.budget.TryAcquire(2 * peerReadBytes) {
		return errPeerBudget
	}
	defer s.tail.budget.Release(2 * peerReadBytes)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A stream silent for three heartbeats is dead (a peer that vanished
	// without closing it); every line, heartbeats included, rearms this.
	silent := time.AfterFunc(3*s.tail.heartbeat, cancel)
	defer silent.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/v1/tail?"+query, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.TailKey)
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	pr := peerReader{br: bufio.NewReaderSize(resp.Body, peerReadBytes), budget: s.tail.budget}
	defer pr.release()
	c := &tailChunk{data: make([]byte, 0, peerReadBytes), written: make(chan struct{}, 1)}
	out := c.data
	for {
		line, ok, err := pr.next()
		if err != nil {
			return err
		}
		silent.Reset(3 * s.tail.heartbeat)
		s.met.tailPeerBytes.Add(float64(len(line)))
		if !ok {
			s.tail.drop(r, 1)
		}
		if len(line) <= 1 { // a heartbeat, or a line not kept
			continue
		}
		if len(out)+len(line) > cap(out) && len(out) > 0 {
			if !hand(ctx, r, c, out) {
				return nil
			}
			out = out[:0]
		}
		if len(line) > cap(out) { // a long line: handed on its own
			if !hand(ctx, r, c, line) {
				return nil
			}
			continue
		}
		out = append(out, line...)
		if pr.br.Buffered() == 0 { // nothing more yet: deliver now
			if !hand(ctx, r, c, out) {
				return nil
			}
			out = out[:0]
		}
	}
}

// hand gives r the lines data in c and waits until they are written (the
// reader finishes every chunk it takes, even when its client is gone).
// false when the tail ended first.
func hand(ctx context.Context, r *tailReader, c *tailChunk, data []byte) bool {
	c.data = data
	select {
	case r.peers <- c:
		<-c.written
		return true
	case <-r.done:
	case <-ctx.Done():
	}
	return false
}

// peerReader reads a peer's stream a line at a time.
type peerReader struct {
	br     *bufio.Reader
	budget *admission.Budget
	long   []byte // a line longer than br's buffer, gathered
	held   int64  // budget charged for long
}

// next returns the next line (valid until the next call). A line longer
// than tailQueueBytes, or one the budget cannot hold, is read past and
// returned empty with ok false.
func (pr *peerReader) next() (line []byte, ok bool, err error) {
	line, err = pr.br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, true, err
	}
	pr.long = append(pr.long[:0], line...)
	ok = true
	for err == bufio.ErrBufferFull {
		line, err = pr.br.ReadSlice('\n')
		if !ok {
			continue
		}
		n := len(pr.long) + len(line)
		if grow := int64(n) - pr.held; n > tailQueueBytes || grow > 0 && !pr.budget.TryAcquire(grow) {
			ok = false
			continue
		} else if grow > 0 {
			pr.held += grow
		}
		pr.long = append(pr.long, line...)
	}
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, nil
	}
	return pr.long, true, nil
}

// release gives back what long was charged.
func (pr *peerReader) release() {
	pr.budget.Release(pr.held)
	pr.held, pr.long = 0, nil
}
