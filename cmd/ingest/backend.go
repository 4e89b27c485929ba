package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"ingest/blobsink"
	"ingest/storage"
	"ingest/tablesink"
)

// backend is the opened storage: blob store, table store, and their closers.
type backend struct {
	blobs  blobsink.Store
	tables tablesink.Store
	close  func()
}

// openBackend opens the blob store, and the table store when tables is set
// (the embedded table store is a single-writer database: the read-only
// commands that do not need it do not open it).
func openBackend(ctx context.Context, cfg *storage.Config, tables bool) (*backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &backend{close: func() {}}
	if cfg.Azure() {
		bc, err := cfg.BlobClient()
		if err != nil {
			return nil, err
		}
		bs, err := blobsink.NewAzureStore(ctx, bc, cfg.Container)
		if err != nil {
			return nil, err
		}
		b.blobs = bs
		if tables {
			tc, err := cfg.TableClient()
			if err != nil {
				return nil, err
			}
			b.tables = tablesink.NewAzureStore(tc)
		}
		return b, nil
	}
	fs, err := blobsink.NewFileStore(cfg.BlobDir())
	if err != nil {
		return nil, err
	}
	b.blobs = fs
	if tables {
		bolt, err := tablesink.OpenBolt(cfg.TableFile())
		if err != nil {
			return nil, err
		}
		b.tables = bolt
		b.close = func() { bolt.Close() }
	}
	return b, nil
}

// tightenDataDir makes the folders the server keeps its data in, the
// write-ahead log and the embedded blobs, private to its user (0700), as
// this version creates them: a data directory written by an older version
// has them 0755 with files 0644 inside, and the log holds login attempts
// with their IPs. Closing the two folders closes everything below them, so
// no file is walked. The data directory itself is left as the operator
// made it: it may hold other things.
func tightenDataDir(cfg *storage.Config, log *slog.Logger) error {
	for _, dir := range []string{cfg.WALDir(), filepath.Dir(cfg.BlobDir())} {
		st, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot check the permissions of %s: %w", dir, err)
		}
		if st.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("cannot make %s private to its user (it is %v): %w", dir, st.Mode().Perm(), err)
		}
		log.Info("data folder made private to this user", "dir", dir, "was", st.Mode().Perm().String(), "now", "-rwx------")
	}
	return nil
}

// readyProbe checks that blob storage answers.
func readyProbe(store blobsink.Store) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := store.Stat(ctx, "ingest-readyz-probe")
		if err == nil || errors.Is(err, blobsink.ErrNotFound) {
			return nil
		}
		return err
	}
}

func newLogger(level string) (*slog.Logger, error) {
	l, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func parseLogLevel(level string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return 0, fmt.Errorf("cannot use --log-level %q: want debug, info, warn or error", level)
	}
	return l, nil
}

// storageFlags declares the storage flags the commands that read storage
// take.
func storageFlags(fs *pflag.FlagSet) *storage.Config {
	cfg := storage.DefaultConfig()
	addGroup(fs, groupStorage, cfg.RegisterFlags)
	return &cfg
}

// tableFlags declares the login-table and storage flags of the commands
// that read or maintain the login tables.
func tableFlags(fs *pflag.FlagSet) (*storage.Config, *tablesink.Config) {
	tcfg := tablesink.DefaultConfig()
	addGroup(fs, groupTables, tcfg.RegisterFlags)
	return storageFlags(fs), &tcfg
}

// eventFilter is the event filter flags the query and tail commands share.
type eventFilter struct{ service, level, text *string }

// eventFilterFlags declares the filter flags; --service is required.
func eventFilterFlags(fs *pflag.FlagSet) eventFilter {
	f := eventFilter{
		service: fs.String("service", "", "`SERVICE` name, a comma list of names, or * for all"),
		level:   fs.String("level", "", "minimum `LEVEL`: trace, debug, info, warn, error, fatal"),
		text:    fs.String("q", "", "`TEXT` the message must contain"),
	}
	markRequired(fs, "service")
	return f
}

// openTableSink opens the backend read-write and a table sink over it, for
// the commands that read or maintain the login tables themselves (no server
// runs on this --data-dir); release closes the backend.
func openTableSink(ctx context.Context, scfg *storage.Config, tcfg tablesink.Config) (sink *tablesink.Sink, release func(), err error) {
	be, err := openBackend(ctx, scfg, true)
	if err != nil {
		return nil, nil, err
	}
	if sink, err = tableSink(be, tcfg); err != nil {
		be.close()
		return nil, nil, err
	}
	return sink, be.close, nil
}

// tableSink builds the login sink for the read-side commands.
func tableSink(b *backend, cfg tablesink.Config) (*tablesink.Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return tablesink.New(cfg, b.tables, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func oneArg(fs *pflag.FlagSet, what string) (string, error) {
	if fs.NArg() != 1 || strings.TrimSpace(fs.Arg(0)) == "" {
		return "", fmt.Errorf("want exactly one %s argument (see --help)", what)
	}
	return fs.Arg(0), nil
}
