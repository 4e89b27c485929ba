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
)

const tailUsage = "ingest tail --service S [--level L] [--q TEXT] [--server URL] [--token T]"

func runTail(args []string) error {
	fs := pflag.NewFlagSet("tail", pflag.ContinueOnError)
	service := fs.String("service", "", "service name, comma list, or * for all (required)")
	level := fs.String("level", "", "minimum level: trace, debug, info, warn, error, fatal")
	text := fs.String("q", "", "text the message must contain")
	server := fs.String("server", "http://127.0.0.1:8080", "base URL of the running server")
	token := fs.String("token", "", "bearer token, when the server has --tokens")
	if err := parse(fs, tailUsage, args); err != nil {
		return err
	}
	if *service == "" {
		return fmt.Errorf("--service is required (a name, a comma list, or *)")
	}
	v := url.Values{"service": {*service}}
	if *level != "" {
		v.Set("level", *level)
	}
	if *text != "" {
		v.Set("q", *text)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := followTail(ctx, strings.TrimRight(*server, "/")+"/v1/tail?"+v.Encode(), *token, os.Stdout, os.Stderr)
	if ctx.Err() != nil {
		return nil // interrupted: the normal way to stop following
	}
	return err
}

// followTail copies a tail's events to out until the server ends the stream
// or ctx is done. Heartbeat lines are skipped; dropped-event markers go to
// errOut, so out stays a clean NDJSON stream of events.
func followTail(ctx context.Context, u, token string, out, errOut io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("cannot tail %s: %w", u, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
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
		switch {
		case len(bytes.TrimSpace(line)) == 0:
			continue
		case bytes.HasPrefix(line, []byte(`{"dropped":`)):
			fmt.Fprintf(errOut, "ingest tail: %s\n", line)
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
