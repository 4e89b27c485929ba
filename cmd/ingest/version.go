package main

import (
	"runtime"
	"runtime/debug"
)

// version and commit may be set at build time, for builds without the git
// metadata (a container build from a source archive, or GOFLAGS=-buildvcs=false):
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/ingest
//
// Otherwise the commit comes from the build's VCS stamp (go build in a git
// checkout records it) and the version from the module, when built as one.
var version, commit string

// versionString is what `ingest --version` prints.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(version, commit, bi) + " " + runtime.Version()
}

// formatVersion is the version, then the commit the binary was built from
// ("+modified" when the tree had uncommitted changes) and its time: the
// values given with -X win over the build information.
func formatVersion(version, commit string, bi *debug.BuildInfo) string {
	when, modified := "", false
	if bi != nil {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		stamped := ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				stamped = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if commit == "" {
			commit = stamped
		} else if stamped != commit {
			when, modified = "", false // they describe another commit
		}
	}
	if version == "" {
		version = "devel"
	}
	out := "ingest " + version
	if commit == "" {
		return out + " (commit unknown: built without VCS information; see -ldflags -X main.commit)"
	}
	out += " (commit " + commit
	if modified {
		out += "+modified"
	}
	if when != "" {
		out += ", " + when
	}
	return out + ")"
}
