package httpapi

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/valyala/fasthttp"

	"ingest/buffer"
	"ingest/internal/httperr"
	"ingest/logline"
)

// The tokens file (--tokens) holds one token per line, optionally followed by
// the service name prefixes the token may write:
//
//	# comment
//	tok-admin
//	tok123 checkout payments-
//
// A token without prefixes writes every service, posts login attempts and
// runs retention. A token with prefixes writes only the services whose
// (stored) names start with one of them: a batch naming any other service,
// in the path, the query, a header or inside one of its events, is refused
// whole with 403, so a misconfigured shipper fails loudly instead of losing
// lines in a 202 it may not read. Every token, scoped or not, may read.

// tokenEntry is one accepted token: its digest and what it may write.
type tokenEntry struct {
	digest   [sha256.Size]byte
	prefixes []string // nil: every service
}

// tokenSet is the accepted tokens, replaced whole on reload.
type tokenSet struct {
	entries []tokenEntry
}

// maxTokensLine bounds a line of the tokens file (a token and its
// prefixes).
const maxTokensLine = 64 << 10

// parseTokens reads a tokens file. Tokens are kept only as SHA-256 digests:
// comparing digests takes the same time whatever the token's length, and the
// process never holds the plain tokens after reading them. extra are more
// unscoped tokens (the server's local token), which the file must not list.
//
// The file is checked whole, and an error names the line, never a token: a
// token listed twice (the lookup would have to choose between its entries),
// a token with a byte no HTTP client sends in a header (a control
// character, or a byte outside printable ASCII), a prefix no stored service
// name can start with, a line over maxTokensLine. Comments (#, at the start
// of a line or after the token), blank lines, CRLF line ends, tabs and a
// UTF-8 byte order mark are read as the editor meant them.
func parseTokens(r io.Reader, name string, extra ...string) (*tokenSet, error) {
	bad := func(format string, args ...any) (*tokenSet, error) {
		return nil, fmt.Errorf("cannot use the tokens file %s: "+format, append([]any{name}, args...)...)
	}
	ts := &tokenSet{}
	lineOf := map[[sha256.Size]byte]int{} // digest -> the line listing it
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), maxTokensLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if !printableASCII(fields[0]) {
			return bad("the token on line %d holds a control character, a space or a byte outside printable ASCII, which no client can send in an Authorization header", n)
		}
		e := tokenEntry{digest: sha256.Sum256([]byte(fields[0]))}
		for _, p := range fields[1:] {
			if strings.HasPrefix(p, "#") {
				break
			}
			if !logline.IsToken([]byte(p)) || strings.HasPrefix(p, ".") {
				return bad("the service prefix %q on line %d can never match: stored service names hold only A-Za-z0-9._:@- (no wildcards) and do not start with '.'", p, n)
			}
			e.prefixes = append(e.prefixes, p)
		}
		if first, dup := lineOf[e.digest]; dup {
			return bad("line %d lists the same token as line %d; list each token once, with all the service prefixes it may write", n, first)
		}
		lineOf[e.digest] = n
		ts.entries = append(ts.entries, e)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return bad("line %d is longer than %d bytes", n+1, maxTokensLine)
	} else if err != nil {
		return nil, fmt.Errorf("cannot read the tokens file %s: %w", name, err)
	}
	if len(ts.entries) == 0 {
		return bad("it holds no token (one per line, optionally followed by service prefixes)")
	}
	for _, t := range extra {
		if t == "" {
			continue
		}
		d := sha256.Sum256([]byte(t))
		if line, dup := lineOf[d]; dup {
			return bad("line %d lists the server's local token (the one it writes to server.json in its data directory for the commands beside it); remove that line", line)
		}
		ts.entries = append(ts.entries, tokenEntry{digest: d})
	}
	return ts, nil
}

// printableASCII reports whether s has only bytes from '!' to '~'.
func printableASCII(s string) bool {
	for i := range len(s) {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}

// readTokensFile reads the tokens file at path and adds the extra unscoped
// tokens.
func readTokensFile(path string, extra ...string) (*tokenSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the tokens file: %w", err)
	}
	defer f.Close()
	return parseTokens(f, path, extra...)
}

// lookup finds the entry of tok, the token a request presents. Every entry
// is compared, in constant time, so the time taken says nothing about which
// entry, if any, matched; parseTokens refused a token listed twice, so at
// most one entry matches, and the select keeps exactly that one.
func (ts *tokenSet) lookup(tok []byte) *tokenEntry {
	d := sha256.Sum256(tok)
	found := 0 // index+1 of the match
	for i := range ts.entries {
		// Branch-free: the same work whether the entry matches or not.
		found = subtle.ConstantTimeSelect(digestsEqual(&d, &ts.entries[i].digest), i+1, found)
	}
	if found == 0 {
		return nil
	}
	return &ts.entries[found-1]
}

// digestsEqual is 1 when a and b are equal, else 0, in constant time: four
// 64-bit XORs instead of subtle.ConstantTimeCompare's byte loop, since every
// request compares against every token.
func digestsEqual(a, b *[sha256.Size]byte) int {
	var diff uint64
	for i := 0; i < sha256.Size; i += 8 {
		diff |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
	}
	return subtle.ConstantTimeEq(int32(uint32(diff)|uint32(diff>>32)), 0)
}

// unscoped reports whether the token may write everything.
func (e *tokenEntry) unscoped() bool { return e.prefixes == nil }

// mayWrite reports whether the token may write service.
func (e *tokenEntry) mayWrite(service []byte) bool {
	if e.prefixes == nil {
		return true
	}
	for _, p := range e.prefixes {
		if bytes.HasPrefix(service, []byte(p)) {
			return true
		}
	}
	return false
}

// tokenKey is where a request's token entry is kept between the routing and
// the handler.
const tokenKey = "ingest.token"

// presented is the token of the Authorization header: Bearer TOKEN;
// Basic with TOKEN as the password (any user name: Fluent Bit, Logstash,
// Vector); ApiKey TOKEN, or ApiKey base64(id:TOKEN) as Filebeat and
// Logstash write an "id:key" API key, which alt then holds (any id). buf
// is scratch space for the decoding.
func presented(ctx *fasthttp.RequestCtx, buf []byte) (tok, alt []byte) {
	h := ctx.Request.Header.Peek("Authorization")
	scheme, val, _ := bytes.Cut(h, []byte{' '})
	val = bytes.TrimSpace(val)
	switch {
	case len(val) == 0:
		return nil, nil
	case bytes.EqualFold(scheme, []byte("Bearer")):
		return val, nil
	case bytes.EqualFold(scheme, []byte("Basic")):
		dec, err := base64.StdEncoding.AppendDecode(buf[:0], val)
		if _, pass, ok := bytes.Cut(dec, []byte{':'}); err == nil && ok {
			return pass, nil
		}
	case bytes.EqualFold(scheme, []byte("ApiKey")):
		dec, err := base64.StdEncoding.AppendDecode(buf[:0], val)
		if _, key, ok := bytes.Cut(dec, []byte{':'}); err == nil && ok {
			return val, key
		}
		return val, nil
	}
	return nil, nil
}

// authorize answers 401 and returns false unless tokens are off or the
// request carries an accepted token; the token's entry is kept on ctx for
// the write checks.
func (s *Server) authorize(ctx *fasthttp.RequestCtx) bool {
	ts := s.tokens.Load()
	if ts == nil {
		return true
	}
	var buf [256]byte
	tok, alt := presented(ctx, buf[:])
	e := ts.lookup(tok)
	if e == nil && alt != nil {
		e = ts.lookup(alt)
	}
	if e != nil {
		ctx.SetUserValue(tokenKey, e)
		return true
	}
	s.met.unauthorized.Inc()
	ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="ingest", Basic realm="ingest"`)
	writeError(ctx, &httperr.Error{Status: fasthttp.StatusUnauthorized, Msg: "missing or unknown bearer token: send Authorization: Bearer <token> " +
		"(or ApiKey <token>, or Basic auth with the token as the password) with a token of the server's --tokens file"})
	return false
}

// requestToken is the entry authorize matched, or nil when tokens are off.
func requestToken(ctx *fasthttp.RequestCtx) *tokenEntry {
	e, _ := ctx.UserValue(tokenKey).(*tokenEntry)
	return e
}

// requireUnscoped refuses (403) a token limited to services: login attempts
// and retention belong to no service.
func requireUnscoped(ctx *fasthttp.RequestCtx, what string) bool {
	if e := requestToken(ctx); e != nil && !e.unscoped() {
		writeError(ctx, &httperr.Error{Status: fasthttp.StatusForbidden, Msg: fmt.Sprintf("this token may write only services starting with %s; %s needs a token without a service list", strings.Join(e.prefixes, ", "), what)})
		return false
	}
	return true
}

// checkWriteScope refuses (403) a batch of log events that names a service
// the request's token may not write. Group keys start with the stored
// service name, up to the first '/'.
func checkWriteScope(ctx *fasthttp.RequestCtx, b *buffer.Batch) error {
	e := requestToken(ctx)
	if e == nil || e.unscoped() {
		return nil
	}
	for _, g := range b.Groups() {
		svc := g.Key
		if i := bytes.IndexByte(svc, '/'); i >= 0 {
			svc = svc[:i]
		}
		if !e.mayWrite(svc) {
			return &httperr.Error{Status: fasthttp.StatusForbidden, Msg: fmt.Sprintf("cannot write service %q with this token: it may write only services starting with %s (the whole batch is refused)", svc, strings.Join(e.prefixes, ", "))}
		}
	}
	return nil
}
