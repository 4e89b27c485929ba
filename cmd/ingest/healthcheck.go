package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// healthcheckCommand asks a running server's /healthz (or --path) and
// exits 0 on 200, 1 otherwise. It exists for container images that carry
// no curl or wget (a Dockerfile HEALTHCHECK, a Kubernetes exec probe). It
// takes the server's own --listen, so INGEST_LISTEN set for the server
// points the check at the same port.
func healthcheckCommand(fs *pflag.FlagSet) func() error {
	listen := fs.String("listen", ":8080", "the server's listen address (`ADDR`); an empty host means 127.0.0.1")
	path := fs.String("path", "/healthz", "the `PATH` to ask: /healthz (alive) or /readyz (ready for traffic)")
	useTLS := fs.Bool("https", false, "ask over HTTPS (the server runs with a TLS certificate); the certificate is not verified")
	timeout := fs.Duration("timeout", 3*time.Second, "the longest `DURATION` to wait for the answer")
	return func() error {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		url, err := healthURL(*listen, *path, *useTLS)
		if err != nil {
			return err
		}
		return askHealth(url, *timeout)
	}
}

// askHealth asks url and returns nil when it answers 200.
func askHealth(url string, timeout time.Duration) error {
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{
		// The check runs beside the server, on loopback: it asks whether
		// the process answers, not who it claims to be.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// healthURL turns a listen address (":8080", "0.0.0.0:8080",
// "127.0.0.1:9000") into the URL to ask on this machine.
func healthURL(listen, path string, useTLS bool) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("cannot use --listen %q: %w", listen, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path, nil
}
