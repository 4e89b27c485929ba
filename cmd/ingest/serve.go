package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/cluster"
	"ingest/httpapi"
	"ingest/query"
	"ingest/tablesink"
)

// runServe runs the server: read and check the flags, open the pipeline
// (storage, sinks, buffer; replaying the WAL), serve HTTP until SIGINT or
// SIGTERM, then shut down in order.
func runServe(args []string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	scfg := storageFlags(fs)
	bcfg := buffer.DefaultConfig()
	bcfg.RegisterFlags(fs)
	sinkCfg := blobsink.DefaultConfig()
	sinkCfg.RegisterFlags(fs)
	tcfg := tablesink.DefaultConfig()
	tcfg.RegisterFlags(fs)
	hcfg := httpapi.DefaultConfig()
	hcfg.RegisterFlags(fs)
	qcfg := query.DefaultConfig()
	qcfg.RegisterFlags(fs)
	cfg := defaultServeConfig()
	cfg.RegisterFlags(fs)
	ccfg := cluster.DefaultConfig()
	ccfg.RegisterFlags(fs)
	if err := parse(fs, "ingest [serve] [flags]", args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, v := range []interface{ Validate() error }{scfg, &bcfg, &sinkCfg, &tcfg, &hcfg, &qcfg, &cfg, &ccfg} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	setMemoryLimit(bcfg.BufferBytes+hcfg.MaxInflightBytes, log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	reg := newRegistry()
	p, err := openPipeline(ctx, scfg, sinkConfigs{buffer: bcfg, blobs: sinkCfg, tables: tcfg}, reg, log)
	if err != nil {
		return err
	}
	defer p.be.close()
	localToken, err := newLocalToken()
	if err != nil {
		return err
	}
	members, err := openCluster(scfg, ccfg, tcfg.Instance, reg, log)
	if err != nil {
		return err
	}
	members.Watch(p.logins.Keyer().SetInstances) // --hot-user-rate is the cluster's
	srv, err := newServer(hcfg, qcfg, p, members, localToken, reg, log)
	if err != nil {
		return err
	}
	addr, removeRunFile, err := listen(srv, &hcfg, scfg.DataDir, localToken)
	if err != nil {
		return err
	}
	defer removeRunFile()
	leave := joinCluster(ctx, members, &hcfg, addr)
	defer reloadOnHangup(srv, &hcfg, log)()
	stopBG := p.runBackground(cfg.StatsInterval)
	defer stopBG()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()
	log.Info("ingest is serving", "version", versionString(), "addr", addr.String(), "tls", hcfg.TLS(), "tokens", hcfg.TokensFile != "", "storage", scfg.Describe(), "ack", bcfg.Ack,
		"flush_interval", bcfg.FlushInterval, "flush_bytes", bcfg.FlushBytes, "buffer_bytes", bcfg.BufferBytes)
	select {
	case err := <-serveErr:
		return fmt.Errorf("cannot serve HTTP: %w", err)
	case <-ctx.Done():
	}
	leave()
	return shutdown(srv, p.buf, p.counters, stopBG, cfg.ShutdownTimeout, log)
}

// serveConfig holds the server's own settings, beside those of the
// packages it wires together.
type serveConfig struct {
	LogLevel        string
	ShutdownTimeout time.Duration // to flush every buffer at shutdown
	StatsInterval   time.Duration // between merges of the counters into the stats table
}

// defaultServeConfig returns the settings the flags default to.
func defaultServeConfig() serveConfig {
	return serveConfig{LogLevel: "info", ShutdownTimeout: 30 * time.Second, StatsInterval: 10 * time.Second}
}

// RegisterFlags adds the server's own flags to fs, with c's values as
// their defaults.
func (c *serveConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn, error")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "time allowed to flush every buffer at shutdown; what is left stays in the WAL")
	fs.DurationVar(&c.StatsInterval, "stats-interval", c.StatsInterval, "how often the per-service counters are merged into the stats table")
}

// Validate checks the log level. It changes nothing.
func (c *serveConfig) Validate() error {
	_, err := parseLogLevel(c.LogLevel)
	return err
}

// listen binds the server's address and records it, with the local token,
// in the data directory for the commands beside the server (runfile.go).
func listen(srv *httpapi.Server, hcfg *httpapi.Config, dataDir, localToken string) (net.Addr, func(), error) {
	addr, err := srv.Listen()
	if err != nil {
		return nil, nil, err
	}
	remove, err := writeRunFile(dataDir, runInfo{PID: os.Getpid(), URL: localURL(addr, hcfg.TLS()), Token: localToken, TLSCert: hcfg.TLSCert})
	if err != nil {
		return nil, nil, err
	}
	return addr, remove, nil
}

// setMemoryLimit gives the Go runtime a soft memory limit of the memory
// budgets plus room for everything else, unless GOMEMLIMIT says otherwise.
// Without it the collector lets the heap grow to twice the live data, so a
// full buffer (a storage outage) could take twice --buffer-bytes.
func setMemoryLimit(budgets int64, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := budgets + 96<<20
	debug.SetMemoryLimit(limit)
	log.Debug("soft memory limit set", "bytes", limit)
}

// shutdown stops in order: refuse new work (503), let requests in progress
// finish, flush every buffer, flush the counters, close the listener.
func shutdown(srv *httpapi.Server, buf *buffer.Buffer, counters *tablesink.Counters, stopBG func(), timeout time.Duration, log *slog.Logger) error {
	log.Info("shutting down: refusing new requests, flushing buffers", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	srv.Drain(ctx)
	flushErr := buf.Close(ctx)
	stopBG()
	if err := counters.Flush(ctx); err != nil {
		log.Warn("cannot flush the stats counters", "err", err)
	}
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("cannot close HTTP connections cleanly", "err", err)
	}
	if flushErr != nil {
		log.Error("shutdown incomplete", "err", flushErr)
		return flushErr
	}
	log.Info("shutdown complete: every buffer is flushed")
	return nil
}
