package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"ingest/httpapi"
	"ingest/logline"
	"ingest/query"
	"ingest/stats"
	"ingest/storage"
)

// The run file: a server on the embedded backend holds the table store
// (bbolt) locked for as long as it runs, so the commands that read tables
// (logins, stats, retention) ask it over HTTP instead. It records where to
// find it in <data-dir>/server.json, readable by its user only:
//
//	{"pid":4242,"url":"http://127.0.0.1:8080","token":"…","tls_cert":""}
//
// The token is accepted by the server, on top of --tokens, for as long as it
// runs: whoever may read the data directory may read every event already.
// A clean shutdown removes the file; one left by a crash is ignored because
// its process is gone or its URL does not answer.

// runFileName is the run file's name inside --data-dir.
const runFileName = "server.json"

// runInfo is the run file's content.
type runInfo struct {
	PID     int    `json:"pid"`
	URL     string `json:"url"`
	Token   string `json:"token"`
	TLSCert string `json:"tls_cert,omitempty"` // the certificate the server presents, pinned by the client
}

// newLocalToken is a random token for the run file.
func newLocalToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make the local token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// localURL is how a command on this machine reaches a server listening on
// addr: the loopback address when it listens on every interface.
func localURL(addr net.Addr, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port := "127.0.0.1", ""
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
		if !ta.IP.IsUnspecified() {
			host = ta.IP.String()
		}
	} else if _, p, err := net.SplitHostPort(addr.String()); err == nil {
		port = p
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// writeRunFile records info in dataDir (atomically, mode 0600) and returns
// the function that removes it, unless another server has replaced it since.
func writeRunFile(dataDir string, info runInfo) (remove func(), err error) {
	if info.TLSCert != "" {
		if info.TLSCert, err = filepath.Abs(info.TLSCert); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, runFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the run file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("cannot write the run file %s: %w", path, err)
	}
	return func() {
		if cur, err := readRunFile(dataDir); err == nil && cur.PID == info.PID && cur.Token == info.Token {
			os.Remove(path)
		}
	}, nil
}

func readRunFile(dataDir string) (runInfo, error) {
	var info runInfo
	b, err := os.ReadFile(filepath.Join(dataDir, runFileName))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("cannot parse %s: %w", filepath.Join(dataDir, runFileName), err)
	}
	return info, nil
}

// runningServer finds the server running on dataDir: its run file names a
// live process whose URL answers /healthz. ok is false when there is none.
func runningServer(dataDir string) (c *serverClient, ok bool, err error) {
	info, err := readRunFile(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if info.PID <= 0 || syscall.Kill(info.PID, 0) == syscall.ESRCH {
		return nil, false, nil // left by a crash
	}
	c = newServerClient(info)
	resp, err := c.get("/healthz")
	if err != nil {
		return nil, false, nil
	}
	resp.Body.Close()
	return c, resp.StatusCode == http.StatusOK, nil
}

// serverClient asks a running server over HTTP with its local token.
type serverClient struct {
	info runInfo
	http *http.Client
}

func newServerClient(info runInfo) *serverClient {
	tr := &http.Transport{ResponseHeaderTimeout: 5 * time.Minute}
	if info.TLSCert != "" {
		// The server's certificate may name another host than 127.0.0.1, or
		// be self-signed: trust exactly the certificate its --tls-cert holds.
		tr.TLSClientConfig = &tls.Config{
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				return pinned(info.TLSCert, cs)
			},
		}
	}
	return &serverClient{info: info, http: &http.Client{Transport: tr, Timeout: 10 * time.Minute}}
}

// pinned accepts the connection when the server's leaf certificate is one of
// the certificates in certFile.
func pinned(certFile string, cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server sent no certificate")
	}
	pemData, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("cannot read the server's certificate: %w", err)
	}
	for {
		var blk *pem.Block
		blk, pemData = pem.Decode(pemData)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" && bytes.Equal(blk.Bytes, cs.PeerCertificates[0].Raw) {
			return nil
		}
	}
	return fmt.Errorf("the server presents a certificate other than %s's (changed since it started? send it SIGHUP)", certFile)
}

func (c *serverClient) do(method, path string) (*http.Response, error) {
	req, err := http.NewRequest(method, c.info.URL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.info.Token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the server running on this --data-dir at %s: %w", c.info.URL, err)
	}
	return resp, nil
}

func (c *serverClient) get(path string) (*http.Response, error) { return c.do(http.MethodGet, path) }

// call sends the request and decodes a 200 answer's JSON into out (when not
// nil); any other status is an error carrying the server's message.
func (c *serverClient) call(method, path string, out any) error {
	resp, err := c.do(method, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("the server running on this --data-dir (%s) answered %s: %s", c.info.URL, resp.Status, e.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("cannot read the answer of %s%s: %w", c.info.URL, path, err)
	}
	return nil
}

// beside finds the server running on the embedded backend's --data-dir, if
// any: the table commands then ask it. On Azure nothing is locked and
// every command reads storage itself.
func beside(cfg *storage.Config) (*serverClient, bool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, false, err
	}
	if cfg.Azure() {
		return nil, false, nil
	}
	return runningServer(cfg.DataDir)
}

// logins is GET /v1/logins/{user}: NDJSON, newest first.
func (c *serverClient) logins(user string, days, limit int) ([]attemptRow, error) {
	path := fmt.Sprintf("/v1/logins/%s?days=%d&limit=%d", url.PathEscape(user), days, limit)
	resp, err := c.get(path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("the server running on this --data-dir (%s) answered %s: %s", c.info.URL, resp.Status, bytes.TrimSpace(b))
	}
	var rows []attemptRow
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		switch query.ControlKind(sc.Bytes()) {
		case "":
		case query.ControlError:
			// The answer is streamed: a storage error after its start
			// comes as its last line, a control line.
			var e struct {
				Error string `json:"error"`
			}
			json.Unmarshal(sc.Bytes(), &e)
			return nil, fmt.Errorf("the server running on this --data-dir (%s) answered: %s", c.info.URL, e.Error)
		default:
			continue // a control line of a newer server
		}
		var r attemptRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("cannot read the answer of %s%s: %w", c.info.URL, path, err)
		}
		r.json = bytes.Clone(sc.Bytes())
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// stats is GET /v1/stats/{service}?day=.
func (c *serverClient) stats(service string, day time.Time) ([24]stats.HourStats, error) {
	var out [24]stats.HourStats
	var ans httpapi.StatsAnswer
	if err := c.call(http.MethodGet, "/v1/stats/"+url.PathEscape(service)+"?day="+day.Format("2006-01-02"), &ans); err != nil {
		return out, err
	}
	for _, h := range ans.Hours {
		if h.Hour < 0 || h.Hour >= len(out) {
			continue
		}
		out[h.Hour].Total = h.Total
		for name, n := range h.Levels {
			if l, ok := logline.ParseLevel([]byte(name)); ok {
				out[h.Hour].Levels[l] = n
			}
		}
	}
	return out, nil
}

// retention is POST /v1/retention.
func (c *serverClient) retention(dry bool, ans *httpapi.RetentionAnswer) error {
	path := "/v1/retention"
	if dry {
		path += "?dry-run=1"
	}
	return c.call(http.MethodPost, path, ans)
}
