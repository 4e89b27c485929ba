// Command ingest is a log and telemetry ingester: apps POST events over
// HTTP, ingest buffers them behind a write-ahead log and writes them as
// delimited lines into hour-prefixed append blobs (Azure Blob Storage or the
// embedded file backend), keeps login attempts in one table per day, and
// answers queries by blob prefix.
//
//	ingest [serve] [flags]      run the server (default)
//	ingest ls PREFIX            list blobs with size and metadata
//	ingest cat BLOB             print a blob's lines
//	ingest query --service S --from T --to T [--level L] [--grep RE] [--format lines|ndjson] [--limit N] [--reverse]
//	ingest logins USER [--days D] [--limit N] [--format table|ndjson]
//	ingest stats SERVICE [--day YYYY-MM-DD]
//	ingest retention [--dry-run]
//	ingest loadtest [flags]
//	ingest --version            the version and the commit it was built from
//	ingest healthcheck [--listen ADDR] [--path /healthz|/readyz]
//	ingest tail --service S [--level L] [--q TEXT] [--server URL]
//
// Every flag also reads INGEST_<FLAG> from the environment and a key of the
// same name from the YAML file of --config; the command line wins over the
// environment, which wins over the file.
//
// serve.go runs the server as named steps; pipeline.go opens what it serves
// from in request order (storage, the sinks and counters, the buffer's
// stream registry wiring them); cluster.go joins the other instances on the
// same account; backend.go opens storage for every command;
// commands.go, tail.go, healthcheck.go and version.go are the other
// commands; runfile.go records a running server for the commands beside it.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
)

type command struct {
	name, usage, summary string
	run                  func(args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"serve", "ingest [serve] [flags]", "run the server (the default command)", runServe},
		{"ls", "ingest ls PREFIX [flags]", "list blobs under a prefix: name, size, metadata", runLs},
		{"cat", "ingest cat BLOB [flags]", "print a blob's lines, decompressing", runCat},
		{"query", "ingest query --service S --from T --to T [--level L] [--grep RE] [--format lines|ndjson] [--limit N] [--reverse]", "query logs by time range", runQuery},
		{"logins", "ingest logins USER [--days D] [--limit N] [--format table|ndjson]", "a user's latest login attempts, newest first", runLogins},
		{"stats", "ingest stats SERVICE [--day YYYY-MM-DD]", "hour-by-hour event counts per level", runStats},
		{"retention", "ingest retention [--dry-run]", "delete login tables older than the retention", runRetention},
		{"loadtest", "ingest loadtest [flags]", "the load generator", runLoadtest},
		{"healthcheck", "ingest healthcheck [--listen ADDR] [--path /healthz|/readyz]", "exit 0 when a running server answers 200 (for container health checks)", runHealthcheck},
		{"tail", tailUsage, "follow a running server's live tail (NDJSON)", runTail},
	}
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		usage()
		return
	}
	if name == "version" || (len(args) > 0 && args[0] == "--version") {
		fmt.Println(versionString())
		return
	}
	for _, c := range commands {
		if c.name == name {
			if err := c.run(args); err != nil {
				if errors.Is(err, pflag.ErrHelp) {
					return
				}
				fmt.Fprintf(os.Stderr, "ingest %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "ingest: unknown command %q\n\n", name)
	usage()
	os.Exit(2)
}

func usage() {
	fmt.Fprintln(os.Stderr, "ingest: a log and telemetry ingester into hour-prefixed blobs.\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'ingest COMMAND --help' for a command's flags. Every flag also reads INGEST_<FLAG>,\nand a key of the same name in the YAML file of --config.")
}

// parse parses a command's flags (interspersed with positional arguments),
// then fills the flags still unset from INGEST_<FLAG>, then from the YAML
// file of --config (or INGEST_CONFIG). Every command calls it first thing,
// before any other work: flagNames relies on that.
func parse(fs *pflag.FlagSet, usageLine string, args []string) error {
	fs.String("config", "", "YAML file of flag values, keys are flag names (listen: \":9000\"); the command line and INGEST_<FLAG> win over it")
	if collecting != nil {
		fs.VisitAll(func(f *pflag.Flag) { collecting[f.Name] = true })
		return errCollected
	}
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s\n\n", usageLine)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := flagutil.ApplyEnv(fs); err != nil {
		return err
	}
	if path, _ := fs.GetString("config"); path != "" {
		known := flagNames()
		return flagutil.ApplyFile(fs, path, func(name string) bool { return known[name] })
	}
	return nil
}

// collecting, while set, makes parse record the flag names of the command
// calling it and stop it with errCollected.
var (
	collecting   map[string]bool
	errCollected = errors.New("flag names collected")
)

// flagNames is the name of every flag of every command, so one --config
// file can serve them all: each command is started with parse collecting
// its flags, and stops there.
func flagNames() map[string]bool {
	collecting = map[string]bool{}
	defer func() { collecting = nil }()
	for _, c := range commands {
		c.run(nil)
	}
	return collecting
}
