#!/usr/bin/env bash
# Refreshes cmd/ingest/default.pgo, the CPU profile `go build` and `go run`
# optimize the ingest binary with: builds ingest without the old profile,
# serves it on loopback with --pprof and profiles it under the load
# generator (scripts/pgo tells how). Bounded: under a minute once built,
# traffic to 127.0.0.1 only.
#
#   ./scripts/pgo.sh            # writes cmd/ingest/default.pgo
#   ./scripts/pgo.sh OUT.pgo    # writes OUT.pgo instead
#
# Rebuild and compare before committing a new profile, e.g.
# ./scripts/bench.sh --sections lowcost,loadgen --ingest OLD, then NEW.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/pgo "$@"
