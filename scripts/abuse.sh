#!/usr/bin/env bash
# Abuse against real servers on loopback, section by section (default:
# all), each printing what a client saw and the server's peak RSS:
#   connections  stalled 16 MiB uploads, 2,000 slowloris connections and
#                header floods at once, while a normal client posts and its
#                statuses and p50/p99/max latency are printed (--duration,
#                default 20 s)
#   text, gzip, otlp, otlp-json, zstd-bombs, services, hostile
#                one memory attack each (scripts/abuse/memory.go), by one
#                client, then 24 at once, each against a fresh server
# Bounded in time and stops by itself; exits 1 when a section fails.
#
#   ./scripts/abuse.sh
#   ./scripts/abuse.sh --sections connections --duration 60s --slowloris 2000 --floods 16
#   ./scripts/abuse.sh --sections text,zstd-bombs --binary /path/to/older/ingest
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 20000 2>/dev/null || true
exec go run ./scripts/abuse "$@"
