package httpapi

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// perIPRig is a perIPListener on a loopback port, its accepted and refused
// connections handed to the test.
type perIPRig struct {
	l        *perIPListener
	accepted chan net.Conn
	refused  chan net.Conn
	counted  atomic.Int64
}

func newPerIPRig(t *testing.T, limit int) *perIPRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &perIPRig{accepted: make(chan net.Conn, 16), refused: make(chan net.Conn, 16)}
	r.l = newPerIPListener(ln, limit, func(c net.Conn) { r.refused <- c; refuseHTTP(c) }, func() { r.counted.Add(1) })
	t.Cleanup(func() { r.l.Close() })
	go func() {
		for {
			c, err := r.l.Accept()
			if err != nil {
				return
			}
			r.accepted <- c
		}
	}()
	return r
}

// dial connects from the loopback address from and reports whether the
// listener accepted the connection; the server's side is returned if so.
func (r *perIPRig) dial(t *testing.T, from string) (client, server net.Conn, accepted bool) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	client, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	select {
	case c := <-r.accepted:
		t.Cleanup(func() { c.Close() })
		return client, c, true
	case <-r.refused:
		return client, nil, false
	case <-time.After(10 * time.Second):
		t.Fatal("the listener neither accepted nor refused a connection")
	}
	return nil, nil, false
}

func TestPerIPListener(t *testing.T) {
	// A step dials from an address (want it accepted or refused) or closes
	// the n-th connection accepted (1-based); then the open counts are want.
	type step struct {
		dial    string
		refused bool
		close   int
		want    map[string]int
	}
	const a, b = "127.0.0.2", "127.0.0.3"
	for _, tc := range []struct {
		name  string
		limit int
		steps []step
	}{
		{"limit reached", 2, []step{
			{dial: a, want: map[string]int{a: 1}},
			{dial: a, want: map[string]int{a: 2}},
			{dial: a, refused: true, want: map[string]int{a: 2}},
			{dial: a, refused: true, want: map[string]int{a: 2}},
		}},
		{"close frees a slot", 1, []step{
			{dial: a, want: map[string]int{a: 1}},
			{dial: a, refused: true, want: map[string]int{a: 1}},
			{close: 1, want: map[string]int{a: 0}},
			{dial: a, want: map[string]int{a: 1}},
			{dial: a, refused: true, want: map[string]int{a: 1}},
		}},
		{"double close frees one slot", 2, []step{
			{dial: a, want: map[string]int{a: 1}},
			{dial: a, want: map[string]int{a: 2}},
			{close: 1, want: map[string]int{a: 1}},
			{close: 1, want: map[string]int{a: 1}},
			{dial: a, want: map[string]int{a: 2}},
			{dial: a, refused: true, want: map[string]int{a: 2}},
		}},
		{"different IPs count apart", 1, []step{
			{dial: a, want: map[string]int{a: 1, b: 0}},
			{dial: b, want: map[string]int{a: 1, b: 1}},
			{dial: a, refused: true, want: map[string]int{a: 1, b: 1}},
			{dial: b, refused: true, want: map[string]int{a: 1, b: 1}},
			{close: 2, want: map[string]int{a: 1, b: 0}},
			{dial: b, want: map[string]int{a: 1, b: 1}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPerIPRig(t, tc.limit)
			var servers []net.Conn
			var refusals int64
			for i, st := range tc.steps {
				if st.dial != "" {
					client, server, accepted := r.dial(t, st.dial)
					if accepted == st.refused {
						t.Fatalf("step %d: a connection from %s accepted %v, want %v", i, st.dial, accepted, !st.refused)
					}
					if accepted {
						servers = append(servers, server)
					} else {
						refusals++
						client.SetDeadline(time.Now().Add(10 * time.Second))
						client.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
						got, _ := io.ReadAll(client)
						if !strings.HasPrefix(string(got), "HTTP/1.1 429 ") || !strings.Contains(string(got), "--max-conns-per-ip") {
							t.Fatalf("step %d: a refused connection read %q, want a 429 naming --max-conns-per-ip", i, got)
						}
					}
				} else {
					servers[st.close-1].Close() // a second Close errs; what counts is the slot
				}
				for ip, n := range st.want {
					if got := r.l.openConns(netip.MustParseAddr(ip)); got != n {
						t.Fatalf("step %d: %d open from %s, want %d", i, got, ip, n)
					}
				}
			}
			if got := r.counted.Load(); got != refusals {
				t.Errorf("%d refusals counted, want %d", got, refusals)
			}
		})
	}
}

// TestPerIPConnCloseWhileReading: closing a connection while another
// goroutine reads it, as a server shutting down does to an idle keep-alive
// connection, is no data race (run with -race) and frees its slot once.
func TestPerIPConnCloseWhileReading(t *testing.T) {
	r := newPerIPRig(t, 1)
	for range 20 {
		_, server, accepted := r.dial(t, "127.0.0.2")
		if !accepted {
			t.Fatal("a connection within the limit was refused: the previous one's slot was not freed")
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			server.Read(make([]byte, 1))
		}()
		go server.Close()
		server.Close()
		<-done
		if got := r.l.openConns(netip.MustParseAddr("127.0.0.2")); got != 0 {
			t.Fatalf("%d open after closing the only connection, want 0", got)
		}
	}
}

// The lingering close after a refused body half-closes the connection
// through the wrapper: the client reads what was written, then end of
// stream, while its own writes still reach the server.
func TestPerIPConnCloseWrite(t *testing.T) {
	r := newPerIPRig(t, 1)
	client, server, accepted := r.dial(t, "127.0.0.2")
	if !accepted {
		t.Fatal("the only connection was refused")
	}
	cw, ok := server.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("%T has no CloseWrite", server)
	}
	server.Write([]byte("answer"))
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	client.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "answer" {
		t.Fatalf("client read %q, %v; want the answer, then end of stream", got, err)
	}
	if _, err := client.Write([]byte("rest")); err != nil {
		t.Fatal(err)
	}
	server.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "rest" {
		t.Fatalf("server read %q, %v after its half-close; want the client's bytes", buf, err)
	}
}
