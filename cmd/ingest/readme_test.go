package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"ingest/internal/ingestexec"
)

// readmeStep is one command of the README's walk-through and the output
// the README shows under it.
type readmeStep struct {
	command string
	want    []string
}

// readmeSteps reads the "## Try it" section of README.md: in its indented
// blocks, a line starting with "$ " is a command (continued on the next
// lines while a single quote is open), the lines under it up to a blank
// line or the next command are its output.
func readmeSteps(t *testing.T) []readmeStep {
	t.Helper()
	text := readRepoFile(t, "README.md")
	i := strings.Index(text, "\n## Try it\n")
	if i < 0 {
		t.Fatal("README.md has no \"## Try it\" section")
	}
	text = text[i+1:]
	if j := strings.Index(text[3:], "\n## "); j >= 0 {
		text = text[:j+3]
	}
	var steps []readmeStep
	var cur *readmeStep
	open := false // a single-quoted string of the command continues
	for _, line := range strings.Split(text, "\n") {
		code, isCode := strings.CutPrefix(line, "    ")
		switch {
		case open && isCode:
			cur.command += "\n" + code
			open = strings.Count(cur.command, "'")%2 == 1
		case isCode && strings.HasPrefix(code, "$ "):
			steps = append(steps, readmeStep{command: code[2:]})
			cur = &steps[len(steps)-1]
			open = strings.Count(cur.command, "'")%2 == 1
		case isCode && cur != nil:
			cur.want = append(cur.want, code)
		default:
			cur = nil
		}
	}
	return steps
}

// outputMatches compares output lines with the README's, spaces and tabs
// collapsed, "..." matching any text.
func outputMatches(got string, want []string) bool {
	space := regexp.MustCompile(`[ \t]+`)
	norm := func(s string) string { return strings.TrimSpace(space.ReplaceAllString(s, " ")) }
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if got == "" {
		lines = nil
	}
	if len(lines) != len(want) {
		return false
	}
	for i, w := range want {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(norm(w)), `\.\.\.`, ".*") + "$"
		if !regexp.MustCompile(re).MatchString(norm(lines[i])) {
			return false
		}
	}
	return true
}

// TestReadmeWalkthrough runs the README's "Try it" commands in order, as a
// new user pastes them, against the real binary on the embedded default:
// `go run ./cmd/ingest` is the built binary, run in a directory whose
// ./data the server uses; localhost:8080 is the server's port. A command
// that reads is retried for a while (events become readable within the
// flush interval); one that posts runs once.
func TestReadmeWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README's examples use curl, which is not installed (scripts/test.sh installs it)")
	}
	steps := readmeSteps(t)
	if len(steps) < 5 {
		t.Fatalf("found %d commands in the README's \"Try it\" section, want the whole walk-through", len(steps))
	}
	dir := t.TempDir()
	s := start(t, filepath.Join(dir, "data"))
	addr := strings.TrimPrefix(s.url, "http://")
	for _, st := range steps {
		cmdText := strings.ReplaceAll(st.command, "go run ./cmd/ingest", binary)
		cmdText = strings.ReplaceAll(cmdText, "localhost:8080", addr)
		posts := strings.Contains(cmdText, "-XPOST")
		var out []byte
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			cmd := exec.Command("bash", "-c", cmdText)
			cmd.Dir = dir
			cmd.Env = ingestexec.Env()
			out, err = cmd.CombinedOutput()
			if (err == nil && outputMatches(string(out), st.want)) || posts || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || !outputMatches(string(out), st.want) {
			t.Fatalf("README command\n  $ %s\nprinted (err %v):\n%s\nthe README shows:\n%s", st.command, err, out, strings.Join(st.want, "\n"))
		}
	}
}

func TestOutputMatches(t *testing.T) {
	for _, tc := range []struct {
		got  string
		want []string
		ok   bool
	}{
		{"a\tb  c\n", []string{"a b c"}, true},
		{`{"id":"01ABC","x":1}` + "\n", []string{`{"id":"...","x":1}`}, true},
		{`{"id":"01ABC","x":2}` + "\n", []string{`{"id":"...","x":1}`}, false},
		{"", nil, true},
		{"", []string{"something"}, false},
		{"one\ntwo\n", []string{"one"}, false},
	} {
		if got := outputMatches(tc.got, tc.want); got != tc.ok {
			t.Errorf("outputMatches(%q, %q) = %v, want %v", tc.got, tc.want, got, tc.ok)
		}
	}
}

// TestDocLinks checks that every relative link of README.md and docs/
// points at a file inside the repository, and that a link to a heading of
// a Markdown file (file.md#anchor, or #anchor within the page) names a
// heading that file has.
func TestDocLinks(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	docs = append(docs, filepath.Join(repoRoot, "README.md"))
	root, _ := filepath.Abs(repoRoot)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs, _ := filepath.Abs(doc)
			if target != "" {
				abs, _ = filepath.Abs(filepath.Join(filepath.Dir(doc), target))
			}
			if abs != root && !strings.HasPrefix(abs, root+string(filepath.Separator)) {
				t.Errorf("%s links to %s, outside the repository", filepath.Base(doc), target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(doc), target)
				continue
			}
			if anchor != "" && strings.HasSuffix(abs, ".md") && !headingAnchors(t, abs)[anchor] {
				t.Errorf("%s links to %s#%s: %s has no such heading", filepath.Base(doc), target, anchor, filepath.Base(abs))
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d links: the link pattern no longer finds them", checked)
	}
}

// headingAnchors returns the anchors of a Markdown file's headings, as
// GitHub makes them: lower case, punctuation dropped, spaces as hyphens,
// a repeated heading's anchor suffixed -1, -2, ...
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		for n := 1; anchors[a]; n++ {
			a = fmt.Sprintf("%s-%d", b.String(), n)
		}
		anchors[a] = true
	}
	return anchors
}

// TestReadmeCommandsTable: the README's Commands table has one row per
// command (and --version), and no row for a command that is gone.
func TestReadmeCommandsTable(t *testing.T) {
	_, section, ok := strings.Cut(readRepoFile(t, "README.md"), "\n## Commands\n")
	if !ok {
		t.Fatal(`README.md has no "## Commands" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `ingest ([^` ]+)").FindAllStringSubmatch(section, -1) {
		rows[strings.Trim(m[1], "[]")] = true
	}
	want := map[string]bool{"--version": true}
	for _, c := range commands {
		want[c.name] = true
	}
	for name := range want {
		if !rows[name] {
			t.Errorf("README.md's Commands table has no row for ingest %s: add | `ingest %s` | what it does |", name, name)
		}
	}
	for name := range rows {
		if !want[name] {
			t.Errorf("README.md's Commands table has a row for ingest %s, which is no command", name)
		}
	}
}

// readmeMaxLines keeps the README a five-minute read: depth goes under
// docs/.
const readmeMaxLines = 300

// TestReadmeIsShort: the README stays within readmeMaxLines.
func TestReadmeIsShort(t *testing.T) {
	if n := strings.Count(readRepoFile(t, "README.md"), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail under docs/ and link to it", n, readmeMaxLines)
	}
}
