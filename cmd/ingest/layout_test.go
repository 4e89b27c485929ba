package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage: the package map of docs/architecture.md
// (the first indented block of its "Package map" section) names every
// package of the repository by its whole path, as the first word of a line,
// and names no folder that is gone. A name must match whole: listing
// scripts/benchlogins does not list scripts/bench.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	listed := packageMap(t)
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
	if len(packages) < 10 {
		t.Fatalf("found %d packages in the tree: the walk no longer finds them", len(packages))
	}
	for pkg := range packages {
		if !listed[pkg] {
			t.Errorf("docs/architecture.md's package map does not name package %s: add a line starting with its path", pkg)
		}
	}
	for name := range listed {
		if st, err := os.Stat(filepath.Join(repoRoot, name)); err != nil || !st.IsDir() {
			t.Errorf("docs/architecture.md's package map names %s, which is not a folder: %v", name, err)
		}
	}
}

// packageMap returns the first word of each line of the package map that
// starts one (indented 4 or 6; a description that goes on is indented
// further).
func packageMap(t *testing.T) map[string]bool {
	t.Helper()
	text := readRepoFile(t, "docs/architecture.md")
	_, text, ok := strings.Cut(text, "\n## Package map\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Package map" section`)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	listed := map[string]bool{}
	started := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "    ") || strings.TrimSpace(line) == "" {
			if started {
				break // the section's first indented block
			}
			continue
		}
		started = true
		if trimmed := strings.TrimLeft(line, " "); len(line)-len(trimmed) <= 6 {
			listed[strings.Fields(trimmed)[0]] = true
		}
	}
	if len(listed) == 0 {
		t.Fatal("found no package map in docs/architecture.md")
	}
	return listed
}
