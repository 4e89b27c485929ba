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

	"ingest/buffer"
	"ingest/cluster"
	"ingest/httpapi"
	"ingest/intake/group"
	"ingest/query"
)

// serveCommand declares the server's flags and returns the server: check
// the flags, open the pipeline (storage, sinks, buffer; replaying the WAL),
// serve HTTP until SIGINT or SIGTERM, then shut down in order.
func serveCommand(fs *pflag.FlagSet) func() error {
	scfg, sinks := pipelineFlags(fs)
	hcfg := httpapi.DefaultConfig()
	addGroup(fs, groupHTTP, hcfg.RegisterFlags)
	gcfg := group.DefaultConfig()
	addGroup(fs, groupIntake, gcfg.RegisterFlags)
	qcfg := query.DefaultConfig()
	addGroup(fs, groupQuery, qcfg.RegisterFlags)
	cfg := defaultServeConfig()
	addGroup(fs, groupServer, cfg.RegisterFlags)
	ccfg := cluster.DefaultConfig()
	addGroup(fs, groupCluster, ccfg.RegisterFlags)
	return func() error {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		for _, v := range []interface{ Validate() error }{scfg, sinks, &hcfg, &gcfg, &qcfg, &cfg, &ccfg} {
			if err := v.Validate(); err != nil {
				return err
			}
		}
		log, err := newLogger(cfg.LogLevel)
		if err != nil {
			return err
		}
		release, err := lockDataDir(scfg.DataDir)
		if err != nil {
			return err
		}
		defer release()
		setMemoryLimit(sinks.buffer.BufferBytes+hcfg.MaxInflightBytes, log)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()

		reg := newRegistry()
		p, err := openPipeline(ctx, scfg, *sinks, reg, log)
		if err != nil {
			return err
		}
		defer p.be.close()
		localToken, err := newLocalToken()
		if err != nil {
			return err
		}
		members, err := openCluster(scfg, ccfg, sinks.stats.Instance, reg, log)
		if err != nil {
			return err
		}
		members.Watch(p.logins.Keyer().SetInstances) // --hot-user-rate is the cluster's
		srv, err := newServer(hcfg, gcfg, qcfg, p, members, localToken, reg, log)
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
		stopBG := p.runBackground()
		defer stopBG()

		serveErr := make(chan error, 1)
		go func() { serveErr <- srv.Serve() }()
		if tcp, udp := srv.SyslogAddrs(); tcp != nil || udp != nil {
			log.Info("syslog is served", "tcp", tcp, "udp", udp, "tls", hcfg.Syslog.TLS)
		}
		log.Info("ingest is serving", "version", versionString(), "addr", addr.String(), "tls", hcfg.TLS(), "tokens", hcfg.TokensFile != "", "storage", scfg.Describe(), "ack", sinks.buffer.Ack,
			"flush_interval", sinks.buffer.FlushInterval, "flush_bytes", sinks.buffer.FlushBytes, "buffer_bytes", sinks.buffer.BufferBytes)
		select {
		case err := <-serveErr:
			return fmt.Errorf("cannot serve HTTP: %w", err)
		case <-ctx.Done():
		}
		leave()
		return shutdown(srv, p.buf, stopBG, cfg.ShutdownTimeout, log)
	}
}

// serveConfig holds the server's own settings, beside those of the
// packages it wires together.
type serveConfig struct {
	LogLevel        string
	ShutdownTimeout time.Duration // bounds the whole exit, flushes included
}

// defaultServeConfig returns the settings the flags default to.
func defaultServeConfig() serveConfig {
	return serveConfig{LogLevel: "info", ShutdownTimeout: 30 * time.Second}
}

// RegisterFlags adds the server's own flags to fs, with c's values as
// their defaults.
func (c *serveConfig) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn, error")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "time allowed for the whole exit on SIGTERM, flushes included: flushes still running then are cancelled, what is not stored stays in the WAL (exit code 1)")
	// Counts are written with each flush now; the flag stays so that
	// configurations that set it still start.
	fs.Duration("stats-interval", 10*time.Second, "not used: event counts are written with each flush")
	_ = fs.MarkDeprecated("stats-interval", "event counts are written with each flush; remove it")
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

// shutdown stops in order, within timeout: refuse new work (503), let
// requests in progress finish, flush every buffer (each flush counts its
// events into the stats table), close the listener.
func shutdown(srv *httpapi.Server, buf *buffer.Buffer, stopBG func(), timeout time.Duration, log *slog.Logger) error {
	log.Info("shutting down: refusing new requests, flushing buffers", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	srv.Drain(ctx)
	flushErr := buf.Close(ctx)
	stopBG()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("cannot close HTTP connections cleanly", "err", err)
	}
	if flushErr != nil {
		log.Error("shutdown incomplete: what is not stored stays in the write-ahead log, and the next start on this --data-dir, or ingest drain, stores it exactly once", "err", flushErr)
		return flushErr
	}
	log.Info("shutdown complete: every buffer is flushed")
	return nil
}
