package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"ingest/query"
	"ingest/storage"
)

// defaultServer is where ingest tail looks without --server and without a
// server running on --data-dir.
const defaultServer = "http://127.0.0.1:8080"

// tailCommand follows a running server's live tail, printing its events as
// NDJSON until interrupted.
func tailCommand(fs *pflag.FlagSet) func() error {
	filter := eventFilterFlags(fs)
	server := fs.String("server", "", "base `URL` of the running server (default: the one running on --data-dir, found by its run file, else "+defaultServer+")")
	token := fs.String("token", "", "bearer `TOKEN`, when the server has --tokens (default: the run file's local token)")
	scfg := storageFlags(fs)
	return func() error {
		v := url.Values{"service": {*filter.service}}
		if *filter.level != "" {
			v.Set("level", *filter.level)
		}
		if *filter.text != "" {
			v.Set("q", *filter.text)
		}
		base, tok, client, err := tailTarget(scfg, *server, *token)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		out, errOut := termLines(os.Stdout), termLines(os.Stderr)
		defer out.Flush()
		defer errOut.Flush()
		err = followTail(ctx, client, strings.TrimRight(base, "/")+"/v1/tail?"+v.Encode(), tok, out, errOut)
		if ctx.Err() != nil {
			return nil // interrupted: the normal way to stop following
		}
		return err
	}
}

// tailTarget decides which server ingest tail follows: --server and
// --token when given; otherwise the server running on --data-dir, as its
// run file names it (URL, local token, pinned certificate), as the query
// and stats commands find it; otherwise defaultServer.
func tailTarget(scfg *storage.Config, server, token string) (base, tok string, client *http.Client, err error) {
	if server != "" {
		return server, token, http.DefaultClient, nil
	}
	srv, ok, err := beside(scfg)
	if err != nil {
		return "", "", nil, err
	}
	if !ok {
		return defaultServer, token, http.DefaultClient, nil
	}
	if token == "" {
		token = srv.info.Token
	}
	// The same transport (certificate pinning), without the client's
	// overall timeout: a tail follows for as long as it is left running.
	client = &http.Client{Transport: srv.http.Transport}
	return srv.info.URL, token, client, nil
}

// followTail copies a tail's events to out until the server ends the stream
// or ctx is done. Heartbeat lines are skipped; control lines (a note of
// dropped events) go to errOut, so out stays a clean NDJSON stream of
// events.
func followTail(ctx context.Context, client *http.Client, u, token string, out, errOut io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("cannot tail %s: %w", u, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot tail %s: %w (is the server running? see --server)", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("cannot tail %s: %s: %s", u, resp.Status, bytes.TrimSpace(b))
	}
	w := bufio.NewWriter(out)
	defer w.Flush()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		// Control lines by their reserved key only: an event's own
		// fields (an attribute "dropped" or "error") never make one.
		if kind := query.ControlKind(line); kind != "" {
			fmt.Fprintf(errOut, "ingest tail: %s\n", line)
			if kind == query.ControlError {
				return fmt.Errorf("tail stream ended: %s", line)
			}
			continue
		}
		w.Write(line)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("tail stream ended: %w", err)
	}
	return nil
}
