package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"ingest/internal/httperr"
)

// The guards that keep a server safe to reach from a browser, above all
// one without --tokens (the default, where every route is open):
//
//   - Host (no tokens only): a page of another site that makes its own name
//     resolve to this server (DNS rebinding) reads the API as its own
//     origin. Such a request names that site in Host, so a Host that is
//     neither an IP address (an address is never rebound) nor a name of
//     this server (localhost, the host name, --listen, --advertise-url) is
//     refused with 421. The health probes stay open: Kubernetes sends the
//     pod IP, other probes may send anything.
//   - Cross-site writes (always): a form or a no-cors fetch of another page
//     can send a POST without asking (no preflight), with a body the intake
//     reads as JSON. A request other than GET, HEAD and OPTIONS is refused
//     (403) when the browser says it comes from another origin:
//     Sec-Fetch-Site other than same-origin or none, else an Origin whose
//     host differs from Host and from --advertise-url's. A request with
//     neither header is not a browser's (or a browser too old to say) and
//     passes. With tokens a browser cannot attach the bearer header across
//     origins anyway; the check costs nothing there and also covers
//     credentials a browser does attach by itself.
//   - Profiles: /debug/pprof shows the command line (a --storage
//     connection string with its key) and memory contents, so with tokens
//     it needs a token without a service list, and without tokens it
//     answers loopback clients only (not through a proxy: a request with
//     X-Forwarded-For or Forwarded is not taken for a local one).

// advertisedHost checks an --advertise-url and returns its host name.
func advertisedHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "") {
		err = fmt.Errorf("want an http or https URL with a host and no path, such as http://ingest-0.ingest-pods:8080")
	}
	if err != nil {
		return "", fmt.Errorf("cannot use --advertise-url %q: %w", raw, err)
	}
	return normalHost(u.Hostname()), nil
}

// hostGuard knows the names a Host header may give when no tokens are set.
type hostGuard struct {
	names     map[string]bool // lower case, no trailing dot
	advertise string          // --advertise-url's host[:port], as an Origin would give it
	listed    string          // the names, for the refusal message
}

// newHostGuard collects the server's names: localhost, the machine's host
// name, the host of --listen and of --advertise-url (both already valid).
func newHostGuard(cfg *Config) *hostGuard {
	g := &hostGuard{names: map[string]bool{"localhost": true}}
	if h, err := os.Hostname(); err == nil && h != "" {
		g.names[normalHost(h)] = true
	}
	if h, _, err := net.SplitHostPort(cfg.Listen); err == nil && h != "" {
		g.names[normalHost(h)] = true
	}
	if cfg.AdvertiseURL != "" {
		h, _ := advertisedHost(cfg.AdvertiseURL)
		g.names[h] = true
		u, _ := url.Parse(cfg.AdvertiseURL)
		g.advertise = strings.ToLower(u.Host)
	}
	var list []string
	for n := range g.names {
		if _, err := netip.ParseAddr(n); err != nil {
			list = append(list, n)
		}
	}
	slices.Sort(list)
	g.listed = strings.Join(list, ", ")
	return g
}

// allows reports whether a Host header names this server: empty (no
// browser sends that), an IP address, or one of its names; the port is not
// looked at.
func (g *hostGuard) allows(host []byte) bool {
	if len(host) == 0 {
		return true
	}
	h := host
	if h[0] == '[' { // [v6] or [v6]:port, nothing else
		end := bytes.IndexByte(h, ']')
		if end < 0 || (end+1 < len(h) && (h[end+1] != ':' || !isPort(h[end+2:]))) {
			return false
		}
		return isIPAddress(h[1:end])
	}
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h[:i], ':') < 0 {
		if !isPort(h[i+1:]) {
			return false
		}
		h = h[:i] // name:port or v4:port; a bare v6 address keeps its colons
	}
	h = bytes.TrimSuffix(h, []byte("."))
	if g.names[string(h)] || isIPAddress(h) { // no allocation: a map index by a converted []byte
		return true
	}
	var lower [253]byte // the longest DNS name
	if len(h) <= len(lower) {
		for i, c := range h {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		return g.names[string(lower[:len(h)])]
	}
	return false
}

// isPort reports whether p is a port number's digits (or nothing, as
// "host:" is read).
func isPort(p []byte) bool {
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isIPAddress reports whether h is an IPv4 or IPv6 address (a zone, as
// in fe80::1%eth0, is not looked at: the address decides).
func isIPAddress(h []byte) bool {
	if i := bytes.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if bytes.IndexByte(h, ':') < 0 {
		return isIPv4(h)
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' || c == ':' || c == '.') {
			return false
		}
	}
	_, err := netip.ParseAddr(string(h))
	return err == nil
}

// isIPv4 reports whether h is four dotted decimal numbers up to 255,
// without leading zeros (as netip.ParseAddr, without its allocation).
func isIPv4(h []byte) bool {
	parts := 0
	for len(h) > 0 && parts < 4 {
		end := bytes.IndexByte(h, '.')
		if end < 0 {
			end = len(h)
		}
		n, num := h[:end], 0
		if len(n) == 0 || len(n) > 3 || (len(n) > 1 && n[0] == '0') {
			return false
		}
		for _, c := range n {
			if c < '0' || c > '9' {
				return false
			}
			num = num*10 + int(c-'0')
		}
		if num > 255 {
			return false
		}
		parts++
		if end == len(h) {
			return parts == 4
		}
		h = h[end+1:]
	}
	return false
}

// normalHost is a host name as the guard compares it.
func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// checkHost answers 421 and returns false for a Host that names another
// site while no tokens are set.
func (s *Server) checkHost(ctx *fasthttp.RequestCtx) bool {
	if s.tokens.Load() != nil || s.hosts.allows(ctx.Request.Header.Host()) {
		return true
	}
	s.refuse(ctx, &httperr.Error{Status: fasthttp.StatusMisdirectedRequest, Msg: fmt.Sprintf(
		"cannot serve host %q: without --tokens this server answers only to its IP addresses and to %s "+
			"(a guard against DNS rebinding); reach it by one of those, set --advertise-url to the URL clients use, or set --tokens",
		ctx.Request.Header.Host(), s.hosts.listed)})
	return false
}

// checkSameOrigin answers 403 and returns false for a request that may
// change data and that a browser sent from a page of another origin.
func (s *Server) checkSameOrigin(ctx *fasthttp.RequestCtx) bool {
	if ctx.IsGet() || ctx.IsHead() || ctx.IsOptions() {
		return true
	}
	site := ctx.Request.Header.Peek("Sec-Fetch-Site")
	origin := ctx.Request.Header.Peek("Origin")
	var cross bool
	switch string(site) {
	case "same-origin", "none":
	case "":
		cross = len(origin) > 0 && !s.sameOrigin(origin, ctx.Request.Header.Host())
	default:
		cross = true
	}
	if !cross {
		return true
	}
	s.refuse(ctx, &httperr.Error{Status: fasthttp.StatusForbidden, Msg: fmt.Sprintf(
		"cannot accept %s %s from a page of another site (Origin %q, Sec-Fetch-Site %q): a browser may change data only from this server's own origin",
		ctx.Method(), ctx.Path(), origin, site)})
	return false
}

// refuse answers err before the request's body is read: with a body on
// its way, the connection is closed after the answer, lingering as for 413
// (linger.go), so the body is never taken for the next request.
func (s *Server) refuse(ctx *fasthttp.RequestCtx, err error) {
	writeError(ctx, err)
	if ctx.Request.Header.ContentLength() != 0 {
		s.answerThenLinger(ctx)
	}
}

// sameOrigin reports whether an Origin header ("scheme://host[:port]", or
// "null") names host, or --advertise-url's host and port.
func (s *Server) sameOrigin(origin, host []byte) bool {
	_, hp, ok := bytes.Cut(origin, []byte("://"))
	if !ok || len(hp) == 0 {
		return false
	}
	return bytes.EqualFold(hp, host) || (s.hosts.advertise != "" && bytes.EqualFold(hp, []byte(s.hosts.advertise)))
}

// withProfileAccess serves the profiles only to whom may read them: with
// tokens, a token without a service list; without, a loopback client.
func (s *Server) withProfileAccess(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if s.tokens.Load() != nil {
			if s.authorize(ctx) && requireUnscoped(ctx, "reading profiles") {
				h(ctx)
			}
			return
		}
		forwarded := len(ctx.Request.Header.Peek("X-Forwarded-For")) > 0 || len(ctx.Request.Header.Peek("Forwarded")) > 0
		if !ctx.RemoteIP().IsLoopback() || forwarded {
			writeError(ctx, &httperr.Error{Status: fasthttp.StatusForbidden, Msg: fmt.Sprintf(
				"cannot serve profiles to %s: without --tokens /debug/pprof answers clients on this machine only "+
					"(profiles show the command line, keys included); ask from this machine, or set --tokens and use a token without a service list",
				ctx.RemoteIP())})
			return
		}
		h(ctx)
	}
}

// openToNetwork reports whether a server listening on addr without tokens
// can be reached from other machines: it listens beyond loopback.
func openToNetwork(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return !ok || !ta.IP.IsLoopback()
}

// warnIfOpen logs, once at start, what a server without tokens exposes
// when other machines can reach it.
func (s *Server) warnIfOpen(addr net.Addr) {
	if s.tokens.Load() != nil || !openToNetwork(addr) {
		return
	}
	s.deps.Log.Warn("serving without --tokens beyond loopback: anyone who can reach "+addr.String()+
		" can post events and login attempts, read every stored event and login attempt (IPs included), and delete login tables",
		"addr", addr.String(),
		"fix", "set --tokens FILE (one token per line), or --listen 127.0.0.1:PORT to serve this machine only")
}
