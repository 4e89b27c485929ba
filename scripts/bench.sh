#!/usr/bin/env bash
# Builds ingest, starts it on the embedded default in a temp dir on loopback,
# drives it with the load generator at a few batch sizes with --ack wal and
# --ack memory, and prints one table: events/s, MB/s, p50/p99 latency, peak
# RSS of the server and its CPU seconds per million events.
#
#   ./scripts/bench.sh                      # 10 s per row
#   ./scripts/bench.sh --duration 30s --runs 3 --batches 100,1000
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/bench "$@"
