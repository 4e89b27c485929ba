#!/usr/bin/env bash
# Refreshes cmd/ingest/default.pgo, the CPU profile `go build` and `go run`
# optimize the ingest binary with (profile-guided optimization: hot calls
# inlined, hot code laid out together). It builds ingest without the old
# profile, serves it on loopback with --pprof and profiles it under the load
# generator twice: the bench's events (about 300 bytes, --ack wal) and
# small events with logins (--event-size 20, 10% logins); then merges both
# profiles. Bounded: under a minute once built, traffic to 127.0.0.1 only.
#
#   ./scripts/pgo.sh            # writes cmd/ingest/default.pgo
#   ./scripts/pgo.sh OUT.pgo    # writes OUT.pgo instead
#
# Rebuild and compare before committing a new profile, e.g.
# ./scripts/bench.sh --sections lowcost,loadgen --ingest OLD, then NEW.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-cmd/ingest/default.pgo}
port=${PGO_PORT:-18077}
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

go build -pgo=off -o "$dir/ingest" ./cmd/ingest
"$dir/ingest" --listen "127.0.0.1:$port" --data-dir "$dir/data" --pprof --log-level warn &
pid=$!
for _ in $(seq 50); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  sleep 0.1
done

# profile NAME LOADTEST-FLAGS...: 12 s of CPU profile in the middle of 18 s of load.
profile() {
  local name=$1
  shift
  "$dir/ingest" loadtest --target "http://127.0.0.1:$port" --batch 1000 --concurrency 8 \
    --duration 18s --quiet "$@" >/dev/null &
  local load=$!
  sleep 3
  curl -fsS -o "$dir/$name.pprof" "http://127.0.0.1:$port/debug/pprof/profile?seconds=12"
  wait "$load"
}
profile bench --event-size 60 --logins-ratio 0
profile small --event-size 20 --logins-ratio 0.1

go tool pprof -proto "$dir/bench.pprof" "$dir/small.pprof" >"$out"
echo "pgo.sh: wrote $out ($(wc -c <"$out") bytes)"
