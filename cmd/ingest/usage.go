package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Help is made from the flag sets alone, so it cannot disagree with them: a
// command's usage line names its positional arguments, its required flags,
// then its own flags (those it declares itself) in brackets, then [flags]
// for the flags it takes from a package's Config, which help lists by
// group. docs/configuration.md follows the same groups, and a test holds it
// to the flag sets.

// Flag groups: the flags a command takes from one package's Config, tagged
// by addGroup. A command's own flags have no group.
const (
	groupServer   = "server"
	groupHTTP     = "httpapi"
	groupIntake   = "group"
	groupBuffer   = "buffer"
	groupBlobs    = "blobsink"
	groupTables   = "tablesink"
	groupStats    = "stats"
	groupQuery    = "query"
	groupCluster  = "cluster"
	groupStorage  = "storage"
	groupLoadtest = "loadtest"
	groupConfig   = "config"
)

// The flag annotations that mark a flag's group and a required flag.
const (
	groupAnnotated = "ingest-group"
	requiredMark   = "ingest-required"
)

// groupTitles are the titles help gives the groups, in the order it lists
// them; a group missing here comes after them, titled by its id.
var groupTitles = []struct{ id, title string }{
	{"", "Flags"},
	{groupServer, "Server"},
	{groupHTTP, "HTTP"},
	{groupIntake, "Intake limits"},
	{groupBuffer, "Buffer, write-ahead log, acknowledgement"},
	{groupBlobs, "Blobs"},
	{groupTables, "Login tables"},
	{groupStats, "Stats"},
	{groupQuery, "Queries"},
	{groupCluster, "Cluster"},
	{groupLoadtest, "Load generator"},
	{groupStorage, "Storage"},
	{groupConfig, "Configuration"},
}

// addGroup declares on fs the flags register adds, tagged with group id.
func addGroup(fs *pflag.FlagSet, id string, register func(*pflag.FlagSet)) {
	g := pflag.NewFlagSet(id, pflag.ContinueOnError)
	g.SortFlags = false // keep the package's order
	register(g)
	g.VisitAll(func(f *pflag.Flag) { annotate(f, groupAnnotated, id) })
	fs.AddFlagSet(g)
}

// groupOf is the group of f, "" for a command's own flag.
func groupOf(f *pflag.Flag) string {
	if v := f.Annotations[groupAnnotated]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// markRequired makes the flag name required: parse refuses to run the
// command while it is empty, and the usage line shows it without brackets.
func markRequired(fs *pflag.FlagSet, name string) {
	annotate(fs.Lookup(name), requiredMark, "true")
}

func isRequired(f *pflag.Flag) bool { return len(f.Annotations[requiredMark]) > 0 }

func annotate(f *pflag.Flag, key, value string) {
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[key] = []string{value}
}

// checkRequired returns an error naming the first required flag that has
// no value.
func checkRequired(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err == nil && isRequired(f) && f.Value.String() == "" {
			_, usage := pflag.UnquoteUsage(f)
			err = fmt.Errorf("cannot run without --%s (%s)", f.Name, usage)
		}
	})
	return err
}

// usageLine is the command's synopsis, made from its flag set.
func usageLine(c *command, fs *pflag.FlagSet) string {
	parts := []string{"ingest", c.name}
	if c.name == "serve" {
		parts[1] = "[serve]" // the default command
	}
	if c.args != "" {
		parts = append(parts, c.args)
	}
	var own []string
	grouped := false
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case isRequired(f):
			parts = append(parts, flagSynopsis(f))
		case groupOf(f) == "":
			own = append(own, "["+flagSynopsis(f)+"]")
		default:
			grouped = true
		}
	})
	parts = append(parts, own...)
	if grouped {
		parts = append(parts, "[flags]")
	}
	return strings.Join(parts, " ")
}

// flagSynopsis is "--name VALUE", VALUE the name back-quoted in the flag's
// help text, else its type; a bool flag takes none.
func flagSynopsis(f *pflag.Flag) string {
	name, _ := pflag.UnquoteUsage(f)
	if name == "" {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + name
}

// writeHelp writes ingest's help: every command's usage line and summary.
func writeHelp(w io.Writer) {
	fmt.Fprint(w, "ingest: a log and telemetry ingester into hour-prefixed blobs.\n\nCommands:\n")
	for _, line := range helpLines() {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprint(w, "\nRun 'ingest COMMAND --help' for a command's flags. Every flag also reads INGEST_<FLAG>\n"+
		"and the key of the same name in the YAML file of --config (docs/configuration.md).\n")
}

// helpLines are the lines of ingest's help that name the commands: each
// command's usage line, then its summary after "  # ".
func helpLines() []string {
	var lines []string
	for i := range commands {
		c := &commands[i]
		fs, _ := c.flags()
		lines = append(lines, usageLine(c, fs)+"  # "+c.summary)
	}
	return append(lines, "ingest --version  # the version and the commit it was built from")
}

// writeCommandHelp writes a command's help: its usage line and summary,
// then its flags by group, each with its default.
func writeCommandHelp(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", usageLine(c, fs), c.summary)
	for _, g := range groupsOf(fs) {
		sub := pflag.NewFlagSet(g.id, pflag.ContinueOnError)
		sub.SortFlags = false
		fs.VisitAll(func(f *pflag.Flag) {
			if groupOf(f) == g.id {
				sub.AddFlag(f)
			}
		})
		fmt.Fprintf(w, "\n%s:\n%s", g.title, sub.FlagUsages())
	}
	fmt.Fprint(w, "\nEvery flag also reads INGEST_<FLAG> (--data-dir: INGEST_DATA_DIR) and the key of the same\n"+
		"name in the --config file; the command line wins over the environment, which wins over the file.\n")
}

// groupsOf returns the groups of fs's flags with their titles, in the
// order of groupTitles, then any other group in the order fs declares it.
func groupsOf(fs *pflag.FlagSet) []struct{ id, title string } {
	has := map[string]bool{}
	var order []string
	fs.VisitAll(func(f *pflag.Flag) {
		if g := groupOf(f); !has[g] {
			has[g] = true
			order = append(order, g)
		}
	})
	var out []struct{ id, title string }
	for _, g := range groupTitles {
		if has[g.id] {
			out = append(out, g)
			delete(has, g.id)
		}
	}
	for _, id := range order {
		if has[id] {
			out = append(out, struct{ id, title string }{id, id})
		}
	}
	return out
}
