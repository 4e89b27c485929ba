package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"ingest/internal/flagutil"
)

// docRow is one flag's row of docs/configuration.md.
type docRow struct {
	line                 int
	def, env, key, cells string
}

// docSection is one group's part of docs/configuration.md: the heading
// whose last code span is the group's id, its "Commands:" line, its rows.
type docSection struct {
	heading  string
	commands []string // nil: no Commands line; "every command" reads as all of them
	rows     map[string]docRow
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// readConfigDoc parses docs/configuration.md into its sections, by group id.
func readConfigDoc(t *testing.T) map[string]*docSection {
	t.Helper()
	sections := map[string]*docSection{}
	var cur *docSection
	for i, line := range strings.Split(readRepoFile(t, "docs/configuration.md"), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			cur = nil
			spans := codeSpan.FindAllStringSubmatch(line, -1)
			if len(spans) == 0 {
				continue // not a flag group: how values are read, the config file ...
			}
			id := spans[len(spans)-1][1]
			if sections[id] != nil {
				t.Errorf("docs/configuration.md:%d: a second section for %q", i+1, id)
			}
			cur = &docSection{heading: strings.TrimPrefix(line, "## "), rows: map[string]docRow{}}
			sections[id] = cur
		case cur != nil && strings.HasPrefix(line, "Commands:"):
			if strings.Contains(line, "every command") {
				for _, c := range commands {
					cur.commands = append(cur.commands, c.name)
				}
				continue
			}
			cur.commands = []string{} // present, even if it names none
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				cur.commands = append(cur.commands, m[1])
			}
		case cur != nil && strings.HasPrefix(line, "| `--"):
			cells := strings.Split(line, "|")
			if len(cells) < 6 {
				t.Errorf("docs/configuration.md:%d: want | flag | default | environment | config key | what it does |, got %q", i+1, line)
				continue
			}
			name := strings.TrimPrefix(strings.Trim(strings.TrimSpace(cells[1]), "`"), "--")
			if _, dup := cur.rows[name]; dup {
				t.Errorf("docs/configuration.md:%d: --%s appears twice under %q", i+1, name, cur.heading)
			}
			cur.rows[name] = docRow{line: i + 1, def: strings.Trim(strings.TrimSpace(cells[2]), "`"),
				env: strings.TrimSpace(cells[3]), key: strings.TrimSpace(cells[4]), cells: line}
		}
	}
	return sections
}

// docGroup is the section a flag of command c is documented in: its
// group, or the command's own section.
func docGroup(c *command, f *pflag.Flag) string {
	if g := groupOf(f); g != "" {
		return g
	}
	return "ingest " + c.name
}

// docRowFor is the row to add for f.
func docRowFor(f *pflag.Flag) string {
	def := ""
	if host, _ := os.Hostname(); host != "" && f.DefValue == host {
		def = "the host name"
	} else if f.DefValue != "" {
		def = "`" + f.DefValue + "`"
	}
	key := "`" + f.Name + "`"
	if f.Name == "config" {
		key = ""
	}
	_, usage := pflag.UnquoteUsage(f)
	return fmt.Sprintf("| `--%s` | %s | `%s` | %s | %s |", f.Name, def, flagutil.EnvName(f.Name), key, usage)
}

// sameDefault reports whether the documented default doc is f's default:
// the same text, or the same duration or size written another way (60s
// for 1m0s, 16KiB for 16384), or "the host name" for a default that is it.
func sameDefault(f *pflag.Flag, doc string) bool {
	// A default taken from the machine is written as what it is, so the
	// document reads the same on every host.
	if host, _ := os.Hostname(); host != "" && f.DefValue == host {
		return doc == "the host name"
	}
	if doc == f.DefValue {
		return true
	}
	switch f.Value.Type() {
	case "duration":
		a, err1 := time.ParseDuration(doc)
		b, err2 := time.ParseDuration(f.DefValue)
		return err1 == nil && err2 == nil && a == b
	case "size":
		a, err1 := flagutil.ParseBytes(doc)
		b, err2 := flagutil.ParseBytes(f.DefValue)
		return err1 == nil && err2 == nil && a == b
	}
	return false
}

// TestConfigurationDoc holds docs/configuration.md to the flag sets: every
// flag of every command has a row in its group's section, with its default,
// its INGEST_<FLAG> variable and its config key; every row is a flag that
// exists; each group's "Commands:" line names the commands that take it.
// A failure names the row to add, change or remove.
func TestConfigurationDoc(t *testing.T) {
	doc := readConfigDoc(t)
	documented := map[string]map[string]bool{} // group -> flags some command has
	takenBy := map[string][]string{}
	for i := range commands {
		c := &commands[i]
		fs, _ := c.flags()
		fs.VisitAll(func(f *pflag.Flag) {
			g := docGroup(c, f)
			if documented[g] == nil {
				documented[g] = map[string]bool{}
			}
			if !documented[g][f.Name] {
				checkFlagRow(t, doc, c, g, f)
			}
			documented[g][f.Name] = true
			if !slices.Contains(takenBy[g], c.name) {
				takenBy[g] = append(takenBy[g], c.name)
			}
		})
	}
	for id, sec := range doc {
		for name, row := range sec.rows {
			if !documented[id][name] {
				t.Errorf("docs/configuration.md:%d documents --%s under %q, but no command has that flag in that group: remove the row\n%s", row.line, name, sec.heading, row.cells)
			}
		}
		if strings.HasPrefix(id, "ingest ") {
			continue // a command's own flags
		}
		want := takenBy[id]
		sort.Strings(want)
		got := slices.Clone(sec.commands)
		sort.Strings(got)
		if sec.commands == nil || !slices.Equal(got, want) {
			t.Errorf("docs/configuration.md, section %q: its Commands line names %q, but the commands that take these flags are %q: write\nCommands: `%s`.", sec.heading, got, want, strings.Join(want, "`, `"))
		}
	}
	if len(doc) < 10 {
		t.Fatalf("found %d flag sections in docs/configuration.md: the heading pattern no longer finds them", len(doc))
	}
}

// checkFlagRow checks f's row in the section of group g.
func checkFlagRow(t *testing.T, doc map[string]*docSection, c *command, g string, f *pflag.Flag) {
	t.Helper()
	want := docRowFor(f)
	sec := doc[g]
	if sec == nil {
		t.Errorf("docs/configuration.md has no section for the flags of group %q (--%s of ingest %s): add a section whose heading ends in (`%s`), a line \"Commands: `%s`.\" and a table with the row\n%s", g, f.Name, c.name, g, c.name, want)
		return
	}
	row, ok := sec.rows[f.Name]
	switch {
	case !ok:
		t.Errorf("docs/configuration.md has no row for --%s (ingest %s): add to the table under %q the row\n%s", f.Name, c.name, sec.heading, want)
	case !sameDefault(f, row.def):
		t.Errorf("docs/configuration.md:%d shows --%s with default %q, the flag's default is %q: write the row as\n%s", row.line, f.Name, row.def, f.DefValue, want)
	case !strings.Contains(row.env, "`"+flagutil.EnvName(f.Name)+"`"):
		t.Errorf("docs/configuration.md:%d: the environment of --%s is `%s`: write the row as\n%s", row.line, f.Name, flagutil.EnvName(f.Name), want)
	case f.Name != "config" && row.key != "`"+f.Name+"`", f.Name == "config" && row.key != "":
		t.Errorf("docs/configuration.md:%d: the config key of --%s is wrong: write the row as\n%s", row.line, f.Name, want)
	}
}
