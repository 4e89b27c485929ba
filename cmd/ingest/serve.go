package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/httpapi"
	"ingest/query"
	"ingest/tablesink"
)

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
	if err := parse(fs, "ingest [serve] [flags]", args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, v := range []interface{ Validate() error }{scfg, &bcfg, &sinkCfg, &tcfg, &hcfg, &qcfg, &cfg} {
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

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	be, err := openBackend(ctx, scfg, true)
	if err != nil {
		return err
	}
	defer be.close()
	blobSink, err := blobsink.NewSink(be.blobs, sinkCfg, reg, log)
	if err != nil {
		return err
	}
	logins, err := tablesink.New(tcfg, be.tables, reg, log)
	if err != nil {
		return err
	}
	logins.SetDeadLetters(be.blobs) // _deadletter/logins/... beside the logs
	counters, err := tablesink.NewCounters(be.tables, tcfg.Instance, reg, log)
	if err != nil {
		return err
	}
	// Replays the write-ahead log: whatever a crash left is re-queued.
	buf, err := buffer.Open(ctx, bcfg, scfg.WALDir(), []buffer.StreamDef{
		{ID: buffer.StreamLogs, Name: "logs", Flusher: blobSink, Observer: counters},
		{ID: buffer.StreamLogins, Name: "logins", Flusher: logins, FlushBytes: logins.ChunkBytes()},
	}, reg, log)
	if err != nil {
		return err
	}
	localToken, err := newLocalToken()
	if err != nil {
		return err
	}
	srv, err := httpapi.New(hcfg, httpapi.Deps{Buffer: buf, Blobs: be.blobs, Logins: logins, Counters: counters,
		Registry: reg, Log: log, Ready: readyProbe(be.blobs), Query: qcfg, LocalToken: localToken})
	if err != nil {
		return err
	}
	addr, err := srv.Listen()
	if err != nil {
		return err
	}
	// The commands beside this server find it here (see runfile.go).
	removeRunFile, err := writeRunFile(scfg.DataDir, runInfo{PID: os.Getpid(), URL: localURL(addr, hcfg.TLS()), Token: localToken, TLSCert: hcfg.TLSCert})
	if err != nil {
		return err
	}
	defer removeRunFile()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if err := srv.Reload(); err != nil {
				log.Error("SIGHUP: cannot reload", "err", err)
			} else {
				log.Info("SIGHUP: tokens and TLS certificate reloaded", "tokens", hcfg.TokensFile != "", "tls", hcfg.TLS())
			}
		}
	}()

	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	go logins.Run(bg, time.Hour) // tomorrow's table ahead of midnight, retention
	go counters.Run(bg, cfg.StatsInterval)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()
	log.Info("ingest is serving", "version", versionString(), "addr", addr.String(), "tls", hcfg.TLS(), "tokens", hcfg.TokensFile != "", "storage", scfg.Describe(), "ack", bcfg.Ack,
		"flush_interval", bcfg.FlushInterval, "flush_bytes", bcfg.FlushBytes, "buffer_bytes", bcfg.BufferBytes)

	select {
	case err := <-serveErr:
		return fmt.Errorf("cannot serve HTTP: %w", err)
	case <-ctx.Done():
	}
	return shutdown(srv, buf, counters, stopBG, cfg.ShutdownTimeout, log)
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
