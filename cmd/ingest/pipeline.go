package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"ingest/blobsink"
	"ingest/buffer"
	"ingest/httpapi"
	"ingest/intake/group"
	"ingest/query"
	"ingest/stats"
	"ingest/storage"
	"ingest/tablesink"
)

// pipeline is what the server serves from, in request order: the buffer
// (with its write-ahead log) in front of the blob and table sinks, the
// stats table the blob sink counts into, and the storage under them.
type pipeline struct {
	be     *backend
	logins *tablesink.Sink
	stats  *stats.Table
	buf    *buffer.Buffer
}

// logsFlushJoin is how many of a log key's waiting chunks one flush takes
// at most (buffer.StreamDef.FlushJoin): 64 MiB blocks at the default
// --flush-bytes, under Azure's 100 MiB append limit (the sink cuts larger
// runs into blocks of that size).
const logsFlushJoin = 16

// sinkConfigs are the settings of the pipeline's parts.
type sinkConfigs struct {
	buffer buffer.Config
	blobs  blobsink.Config
	tables tablesink.Config
	stats  stats.Config
}

// pipelineFlags registers the storage flags and the pipeline's parts'
// flags (the commands that open a pipeline, serve and drain, take the
// same), with their defaults.
func pipelineFlags(fs *pflag.FlagSet) (*storage.Config, *sinkConfigs) {
	scfg := storageFlags(fs)
	c := &sinkConfigs{buffer: buffer.DefaultConfig(), blobs: blobsink.DefaultConfig(), tables: tablesink.DefaultConfig(), stats: stats.DefaultConfig()}
	addGroup(fs, groupBuffer, c.buffer.RegisterFlags)
	addGroup(fs, groupBlobs, c.blobs.RegisterFlags)
	addGroup(fs, groupTables, c.tables.RegisterFlags)
	addGroup(fs, groupStats, c.stats.RegisterFlags)
	return scfg, c
}

// Validate checks the parts' settings (the storage settings are checked
// when the backend opens).
func (c *sinkConfigs) Validate() error {
	for _, v := range []interface{ Validate() error }{&c.buffer, &c.blobs, &c.tables, &c.stats} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// newRegistry returns the metrics registry, with the Go runtime's and the
// process's collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// openPipeline opens storage, the sinks and counters on it, and the buffer
// whose stream registry wires them; opening the buffer replays the
// write-ahead log, re-queueing whatever a crash left.
func openPipeline(ctx context.Context, scfg *storage.Config, cfg sinkConfigs, reg prometheus.Registerer, log *slog.Logger) (_ *pipeline, err error) {
	if err := tightenDataDir(scfg, log); err != nil {
		return nil, err
	}
	be, err := openBackend(ctx, scfg, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			be.close()
		}
	}()
	blobSink, err := blobsink.NewSink(be.blobs, cfg.blobs, reg, log)
	if err != nil {
		return nil, err
	}
	logins, err := tablesink.New(cfg.tables, be.tables, reg, log)
	if err != nil {
		return nil, err
	}
	logins.SetDeadLetters(be.blobs) // _deadletter/logins/... beside the logs
	statsTable, err := stats.New(be.tables, cfg.stats)
	if err != nil {
		return nil, err
	}
	// Each flush counts what it stored, keyed to its blob, so a replay
	// neither loses nor repeats a count.
	blobSink.CountInto(statsTable)
	buf, err := buffer.Open(ctx, cfg.buffer, scfg.WALDir(), []buffer.StreamDef{
		// A joined flush is one append and one metadata write for up to
		// four chunks, where one chunk each paid both.
		{ID: buffer.StreamLogs, Name: "logs", Flusher: blobSink, FlushJoin: logsFlushJoin, Checksums: blobSink.TakesSums()},
		{ID: buffer.StreamLogins, Name: "logins", Flusher: logins,
			FlushBytes: logins.ChunkBytes(), FlushAge: logins.FlushAge(), FlushQuiet: logins.FlushQuiet()},
	}, reg, log)
	if err != nil {
		return nil, err
	}
	return &pipeline{be: be, logins: logins, stats: statsTable, buf: buf}, nil
}

// runBackground starts the pipeline's periodic work: the day tables
// (tomorrow's ahead of midnight, retention). The returned function stops
// it.
func (p *pipeline) runBackground() (stop func()) {
	bg, stop := context.WithCancel(context.Background())
	go p.logins.Run(bg, time.Hour)
	return stop
}

// newServer builds the HTTP server on the pipeline and binds its address.
func newServer(hcfg httpapi.Config, gcfg group.Config, qcfg query.Config, p *pipeline, members httpapi.Cluster, localToken string, reg *prometheus.Registry, log *slog.Logger) (*httpapi.Server, error) {
	if hcfg.Pprof {
		// The mutex and block profiles stay empty unless sampled: one
		// contended unlock in 100, one blocking event per 100 µs blocked.
		runtime.SetMutexProfileFraction(100)
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
	}
	groups, err := group.NewPool(gcfg, p.logins)
	if err != nil {
		return nil, err
	}
	return httpapi.New(hcfg, httpapi.Deps{Buffer: p.buf, Blobs: p.be.blobs, Logins: p.logins, Stats: p.stats,
		Registry: reg, Log: log, Ready: readyProbe(p.be.blobs), Query: qcfg, LocalToken: localToken, Groups: groups, Cluster: members})
}

// reloadOnHangup reloads the server's tokens and TLS certificate on each
// SIGHUP until the returned function is called.
func reloadOnHangup(srv *httpapi.Server, hcfg *httpapi.Config, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if err := srv.Reload(); err != nil {
				log.Error("SIGHUP: cannot reload", "err", err)
			} else {
				log.Info("SIGHUP: tokens and TLS certificate reloaded", "tokens", hcfg.TokensFile != "", "tls", hcfg.TLS())
			}
		}
	}()
	return func() { signal.Stop(hup) }
}
