package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeLayoutNamesEveryPackage: the folder table of the README's
// "How it works" (its first indented block) names every package of the repository (a nested one, such
// as scripts/bench or blobsink/storetest, at least by its last element under
// its parent's line), and names no folder that is gone.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	text := readRepoFile(t, "README.md")
	i := strings.Index(text, "\n## How it works\n")
	if i < 0 {
		t.Fatal(`README.md has no "## How it works" section`)
	}
	text = text[i+1:]
	if j := strings.Index(text[3:], "\n## "); j >= 0 {
		text = text[:j+3]
	}
	listed := map[string]bool{}
	var table []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "    ") || strings.TrimSpace(line) == "" {
			if len(table) > 0 {
				break // the table is the section's first indented block
			}
			continue
		}
		table = append(table, line)
		// A folder starts its line, indented 4 or 6; a description that
		// goes on is indented further.
		if trimmed := strings.TrimLeft(line, " "); len(line)-len(trimmed) <= 6 {
			listed[strings.Fields(trimmed)[0]] = true
		}
	}
	if len(listed) == 0 {
		t.Fatal("found no folder table under How it works")
	}
	all := strings.Join(table, "\n")
	packages := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && p != repoRoot)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(repoRoot, filepath.Dir(p))
			packages[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range packages {
		if listed[pkg] {
			continue
		}
		parent, base := filepath.Split(pkg)
		if parent != "" && listed[strings.TrimSuffix(parent, "/")] && strings.Contains(all, base) {
			continue
		}
		t.Errorf("README How it works does not name package %s", pkg)
	}
	for name := range listed {
		if _, err := os.Stat(filepath.Join(repoRoot, name)); err != nil {
			t.Errorf("README How it works names %s, which is not a folder: %v", name, err)
		}
	}
}
