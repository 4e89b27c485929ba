package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"ingest/buffer"
	"ingest/internal/dirlock"
)

// drainCommand stores what the write-ahead log of --data-dir holds,
// exactly once, without serving: the recovery a restart does (unfinished
// flushes resolved, the rest requeued), then every buffer flushed, then
// exit. It is how a volume whose server will not run again (a scaled-down
// replica) gives up its acknowledged events. The sink flags are serve's:
// the same configuration file serves both.
func drainCommand(fs *pflag.FlagSet) func() error {
	scfg, sinks := pipelineFlags(fs)
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after this `DURATION` (0: no limit); what is not stored by then stays in the write-ahead log for the next drain or start")
	level := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn, error")
	return func() error {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		sinks.buffer.Ack = buffer.AckWAL // whatever serve acknowledged with, the log is what is drained
		if err := sinks.Validate(); err != nil {
			return err
		}
		log, err := newLogger(*level)
		if err != nil {
			return err
		}
		if _, err := os.Stat(scfg.WALDir()); err != nil {
			return fmt.Errorf("cannot drain %s: it holds no write-ahead log (%w)", scfg.DataDir, err)
		}
		release, err := lockDataDir(scfg.DataDir)
		if err != nil {
			return err
		}
		defer release()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return drain(ctx, scfg.DataDir, func(ctx context.Context) (*pipeline, error) {
			return openPipeline(ctx, scfg, *sinks, newRegistry(), log)
		}, *timeout, log)
	}
}

// drain opens the pipeline (replaying the WAL) and closes it, which
// flushes every key, within timeout.
func drain(ctx context.Context, dir string, open func(context.Context) (*pipeline, error), timeout time.Duration, log *slog.Logger) error {
	began := time.Now()
	p, err := open(ctx)
	if err != nil {
		return err
	}
	defer p.be.close()
	pending := p.buf.Used()
	closeCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		closeCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	if err := p.buf.Close(closeCtx); err != nil {
		return fmt.Errorf("cannot drain %s: %w; run ingest drain again", dir, err)
	}
	log.Info("drained: everything the write-ahead log held is stored", "data_dir", dir, "bytes", pending, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// lockDataDir holds --data-dir for this process (serve and drain): while
// one of them runs, another on the same directory is refused, with exit
// status 2.
func lockDataDir(dir string) (release func(), err error) {
	release, err = dirlock.Lock(dir)
	if errors.Is(err, dirlock.ErrHeld) {
		return nil, &exitError{code: 2, err: fmt.Errorf("cannot use --data-dir %s: %w: a server or a drain is running on it; stop it first", dir, err)}
	}
	return release, err
}

// exitError ends a command with an exit status of its own.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
