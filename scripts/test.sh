#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs what the tests need
# (Azurite, the Azure Storage emulator, pinned in package-lock.json), then
# every Go test, fuzz seed corpus and example. Tests that touch Azure storage
# start Azurite themselves on free loopback ports; under CI=true a missing
# Azurite fails them instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."

# The whole suite, always: an argument such as -short would silently skip
# the long integration tests. For a subset, run `go test` directly.
if [ $# -gt 0 ]; then
  echo "test.sh: takes no arguments (got: $*); it runs the whole suite. For a subset: go test -run NAME ./pkg" >&2
  exit 2
fi

command -v go >/dev/null || { echo "test.sh: Go is required (https://go.dev/dl/)" >&2; exit 1; }
if ! command -v npm >/dev/null; then
  echo "test.sh: npm is required to install Azurite; installing Node.js from Debian's packages" >&2
  apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v curl >/dev/null; then
  echo "test.sh: the README walk-through test runs curl; installing it from Debian's packages" >&2
  apt-get update -qq && apt-get install -y -qq curl >/dev/null
fi
if [ ! -x node_modules/.bin/azurite ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# The query page's test drives Debian's headless Chromium.
if ! command -v chromium >/dev/null; then
  echo "test.sh: installing Debian's chromium for the query page test" >&2
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi

# Tests build without the profile in cmd/ingest/default.pgo: profile-guided
# optimization changes how fast the code runs, not what it does, and
# compiling every dependency again with the profile (for the test binary of
# cmd/ingest and each ingest binary the tests build) would add minutes.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-pgo=off"

go vet ./...
go test -count=1 -timeout 15m ./...
# Every package where goroutines share state, again under the race detector
# (cmd/ingest runs a -race build of the binary under load instead).
go test -count=1 -timeout 10m -race ./blobsink ./buffer ./httpapi ./loadtest ./query ./shard ./tablesink ./wal ./internal/...
