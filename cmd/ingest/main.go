// Command ingest is a log and telemetry ingester: apps POST events over
// HTTP, ingest buffers them behind a write-ahead log and writes them as
// delimited lines into hour-prefixed append blobs (Azure Blob Storage or the
// embedded file backend), keeps login attempts in one table per day, and
// answers queries by blob prefix.
//
// `ingest help` lists the commands, `ingest COMMAND --help` a command's
// flags; docs/configuration.md documents every flag. Both are made from the
// one flag set each command declares (usage.go), which is also where the
// --config file's keys come from.
//
// Every flag also reads INGEST_<FLAG> from the environment and a key of the
// same name from the YAML file of --config; the command line wins over the
// environment, which wins over the file.
//
// serve.go runs the server as named steps; pipeline.go opens what it serves
// from in request order (storage, the sinks and counters, the buffer's
// stream registry wiring them); cluster.go joins the other instances on the
// same account; backend.go opens storage for every command;
// commands.go, tail.go, drain.go, healthcheck.go and version.go are the
// other commands; runfile.go records a running server for the commands beside it;
// terminal.go escapes stored text on its way to a terminal.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
)

// command is one subcommand of ingest.
type command struct {
	name    string
	args    string // the positional arguments, for the usage line ("PREFIX"); "" for none
	summary string
	// setup declares the command's flags on fs and returns the command, to
	// run once fs is parsed. It does nothing else, so the flags of every
	// command can be collected without running any (flagNames).
	setup func(fs *pflag.FlagSet) (run func() error)
}

// commands are ingest's subcommands, in the order help lists them.
var commands = []command{
	{"serve", "", "run the server (the default command)", serveCommand},
	{"ls", "PREFIX", "list blobs under a prefix: name, size, metadata", lsCommand},
	{"cat", "BLOB", "print a blob's lines, decompressing", catCommand},
	{"query", "", "query logs by time range", queryCommand},
	{"logins", "USER", "a user's latest login attempts, newest first", loginsCommand},
	{"stats", "SERVICE", "hour-by-hour event counts per level", statsCommand},
	{"retention", "", "delete login tables older than the retention", retentionCommand},
	{"loadtest", "", "the load generator", loadtestCommand},
	{"healthcheck", "", "exit 0 when a running server answers 200 (for container health checks)", healthcheckCommand},
	{"tail", "", "follow a running server's live tail (NDJSON)", tailCommand},
	{"drain", "", "store what a data directory's write-ahead log holds, then exit (no server)", drainCommand},
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		writeHelp(os.Stdout)
		return
	}
	if name == "version" || (len(args) > 0 && args[0] == "--version") {
		fmt.Println(versionString())
		return
	}
	c := findCommand(name)
	if c == nil {
		fmt.Fprintf(os.Stderr, "ingest: unknown command %q\n\n", name)
		writeHelp(os.Stderr)
		os.Exit(2)
	}
	if err := c.run(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		// An error may quote what a server or storage answered.
		fmt.Fprintf(os.Stderr, "ingest %s: %s\n", name, termSafe(err.Error()))
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		os.Exit(code)
	}
}

// findCommand returns the command called name, or nil.
func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// flags returns the command's flag set, --config included, and the
// command to run once it is parsed.
func (c *command) flags() (*pflag.FlagSet, func() error) {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false // help lists a command's flags in the order it declares them
	run := c.setup(fs)
	addGroup(fs, groupConfig, func(g *pflag.FlagSet) {
		g.String("config", "", "YAML `FILE` of flag values, keys are flag names (listen: \":9000\"); the command line and INGEST_<FLAG> win over it")
	})
	return fs, run
}

// run parses args into the command's flags and runs it.
func (c *command) run(args []string) error {
	fs, run := c.flags()
	fs.Usage = func() { writeCommandHelp(os.Stderr, c, fs) }
	if err := parse(fs, args); err != nil {
		return err
	}
	return run()
}

// parse parses a command's flags (interspersed with positional arguments),
// then fills the flags still unset from INGEST_<FLAG>, then from the YAML
// file of --config (or INGEST_CONFIG), then checks that the required flags
// have a value.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := flagutil.ApplyEnv(fs); err != nil {
		return err
	}
	if path, _ := fs.GetString("config"); path != "" {
		known := flagNames()
		if err := flagutil.ApplyFile(fs, path, func(name string) bool { return known[name] }); err != nil {
			return err
		}
	}
	return checkRequired(fs)
}

// flagNames is the name of every flag of every command, so one --config
// file can serve them all: a key that is a flag of another command is
// skipped, one that is no flag of any command is an error.
func flagNames() map[string]bool {
	names := map[string]bool{}
	for i := range commands {
		fs, _ := commands[i].flags()
		fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	}
	return names
}
