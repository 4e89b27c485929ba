#!/usr/bin/env bash
# Abuse against real servers on loopback, section by section (default:
# all), each printing what a client saw and the server's peak RSS:
#   connections  stalled 16 MiB uploads, 2,000 slowloris connections and
#                header floods at once, while a normal client posts and its
#                statuses and p50/p99/max latency are printed (--duration,
#                default 20 s)
#   text, gzip, otlp, otlp-json, zstd-bombs, services, new-services, hostile
#                one memory attack each (scripts/abuse/memory.go), by one
#                client, then 24 at once, each against a fresh server
#   crashes      far-range queries (1700..now, to 2261 and 9999) and absurd
#                histogram steps: 200 or 400, /healthz still 200, at most
#                --max-request-cpu (2 s) of server CPU per far-range query
#   tokens       a tokens file listing a token twice (refused at start and
#                on SIGHUP, naming the lines, not the token); a token
#                limited to checkout writing payments-x (403)
#   defaults     127.0.0.1 without --tokens: Host evil.example 421,
#                cross-site POST 403, /debug/pprof from loopback 200,
#                through a proxy 403
#   tail-readers --tail-readers (100) tails that never read while two
#                writers post for --duration: peak RSS under --max-rss
# Those four print one PASS/FAIL line per attack.
# Bounded in time and stops by itself; exits 1 when a section fails.
#
#   ./scripts/abuse.sh
#   ./scripts/abuse.sh --sections connections --duration 60s --slowloris 2000 --floods 16
#   ./scripts/abuse.sh --sections text,zstd-bombs --binary /path/to/older/ingest
#   ./scripts/abuse.sh --sections crashes,tokens,defaults --binary /path/to/older/ingest
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 20000 2>/dev/null || true
exec go run ./scripts/abuse "$@"
