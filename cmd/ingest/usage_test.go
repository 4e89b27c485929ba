package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestUsageLineFromFlagSet: every command's usage line names each of its
// own flags, in brackets unless required, and ends in [flags] when it takes
// flags of a group; the flags the hand-written usage text once got wrong
// (query's --from and --to shown as required, --q, --stats and tail's
// --token missing) read right.
func TestUsageLineFromFlagSet(t *testing.T) {
	lines := map[string]string{}
	for i := range commands {
		c := &commands[i]
		fs, _ := c.flags()
		line := usageLine(c, fs) + " "
		lines[c.name] = line
		grouped := false
		fs.VisitAll(func(f *pflag.Flag) {
			syn := flagSynopsis(f)
			switch {
			case isRequired(f):
				if !strings.Contains(line, " "+syn+" ") || strings.Contains(line, "["+syn+"]") {
					t.Errorf("ingest %s: usage line %q does not show required %s unbracketed", c.name, line, syn)
				}
			case groupOf(f) == "":
				if !strings.Contains(line, " ["+syn+"] ") {
					t.Errorf("ingest %s: usage line %q does not show its flag [%s]", c.name, line, syn)
				}
			default:
				grouped = true
				if strings.Contains(line, "--"+f.Name+" ") || strings.Contains(line, "--"+f.Name+"]") {
					t.Errorf("ingest %s: usage line %q names --%s, a flag of group %s listed under [flags]", c.name, line, f.Name, groupOf(f))
				}
			}
		})
		if grouped != strings.HasSuffix(line, " [flags] ") {
			t.Errorf("ingest %s: usage line %q: [flags] at the end should say whether it takes group flags (%v)", c.name, line, grouped)
		}
	}
	for cmd, want := range map[string][]string{
		"query":  {"ingest query --service SERVICE ", " [--from TIME] ", " [--to TIME] ", " [--q TEXT] ", " [--stats] ", " [--format lines|ndjson] "},
		"tail":   {"ingest tail --service SERVICE ", " [--token TOKEN] ", " [--server URL] "},
		"serve":  {"ingest [serve] [flags] "},
		"logins": {"ingest logins USER [--days N] "},
	} {
		for _, w := range want {
			if !strings.Contains(lines[cmd], w) {
				t.Errorf("ingest %s: usage line %q lacks %q", cmd, lines[cmd], w)
			}
		}
	}
}

// TestCommandHelpListsEveryFlag: a command's --help lists every flag under
// its group's title, a group without a title under its id, and the usage
// line and summary first.
func TestCommandHelpListsEveryFlag(t *testing.T) {
	test := command{name: "x", args: "ARG", summary: "a test command", setup: func(fs *pflag.FlagSet) func() error {
		fs.String("own", "", "an own flag taking a `VALUE`")
		markRequired(fs, "own")
		storageFlags(fs)
		addGroup(fs, "unlisted", func(g *pflag.FlagSet) { g.Int("unlisted-n", 3, "a flag of a group help has no title for") })
		return nil
	}}
	all := append([]command{test}, commands...)
	for i := range all {
		c := &all[i]
		fs, _ := c.flags()
		var b bytes.Buffer
		writeCommandHelp(&b, c, fs)
		help := b.String()
		if !strings.HasPrefix(help, "usage: "+usageLine(c, fs)+"\n\n"+c.summary+"\n") {
			t.Errorf("ingest %s --help does not start with its usage line and summary:\n%s", c.name, help)
		}
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Deprecated != "" {
				return // accepted so old configurations start, and hidden
			}
			title := groupOf(f)
			for _, g := range groupTitles {
				if g.id == groupOf(f) {
					title = g.title
				}
			}
			at := strings.Index(help, "\n"+title+":\n")
			if at < 0 || !strings.Contains(help[at:], "--"+f.Name+" ") {
				t.Errorf("ingest %s --help does not list --%s under %q:\n%s", c.name, f.Name, title, help)
			}
		})
	}
}

// TestRequiredFlag: a required flag left empty stops the command with an
// error naming it; set from INGEST_<FLAG> it counts as given.
func TestRequiredFlag(t *testing.T) {
	c := findCommand("tail")
	fs, _ := c.flags()
	if err := parse(fs, nil); err == nil || !strings.Contains(err.Error(), "without --service") {
		t.Fatalf("ingest tail without --service: %v, want an error naming --service", err)
	}
	t.Setenv("INGEST_SERVICE", "api")
	fs, _ = c.flags()
	if err := parse(fs, nil); err != nil {
		t.Fatalf("ingest tail with INGEST_SERVICE=api: %v", err)
	}
}

// TestFlagNamesIsEveryCommandsFlags: the keys a --config file may hold are
// the flags of every command, so one file serves them all.
func TestFlagNamesIsEveryCommandsFlags(t *testing.T) {
	names := flagNames()
	for i := range commands {
		fs, _ := commands[i].flags()
		fs.VisitAll(func(f *pflag.Flag) {
			if !names[f.Name] {
				t.Errorf("flagNames lacks --%s of ingest %s: a --config file setting it would be refused", f.Name, commands[i].name)
			}
		})
	}
	if names["lisen"] {
		t.Error("flagNames holds a name no command has")
	}
}

// TestContractCommandLine: the command block of docs/contract.md is what
// `ingest help` prints, so the contract cannot disagree with the flags.
func TestContractCommandLine(t *testing.T) {
	text := readRepoFile(t, "docs/contract.md")
	_, section, ok := strings.Cut(text, "\n## Command line\n")
	if !ok {
		t.Fatal(`docs/contract.md has no "## Command line" section`)
	}
	var block []string
	for _, line := range strings.Split(section, "\n") {
		code, isCode := strings.CutPrefix(line, "    ")
		if !isCode {
			if len(block) > 0 {
				break // the section's first indented block
			}
			continue
		}
		block = append(block, code)
	}
	want := helpLines()
	if strings.Join(block, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/contract.md's Command line block differs from `ingest help`; write it as:\n\n    %s", strings.Join(want, "\n    "))
	}
}
