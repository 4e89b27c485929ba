#!/usr/bin/env bash
# Connection abuse against a real server on loopback: stalled 16 MiB
# uploads, 2,000 slowloris connections and header floods at once, while a
# normal client posts and its statuses and p50/p99/max latency are printed.
# Bounded (--duration, default 20 s) and stops by itself.
#
#   ./scripts/abuse.sh
#   ./scripts/abuse.sh --duration 60s --slowloris 2000 --floods 16
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 20000 2>/dev/null || true
exec go run ./scripts/abuse "$@"
