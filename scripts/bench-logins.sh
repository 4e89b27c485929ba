#!/usr/bin/env bash
# Measures the login table path on Azurite (started here, on loopback): a row
# pair per run, Azurite's own 100-entity transaction rate from a plain
# aztables client, then ingest storing POST /v1/logins into the same Azurite;
# the write requests per 1,000 attempts; GET /v1/logins/{user}?limit=20
# latency for a user with 10,000 attempts today; the partition report with
# one user under attack. Needs Azurite (npm ci). Not part of the test suite.
#
#   ./scripts/bench-logins.sh                       # 60,000 attempts per row, one pair
#   ./scripts/bench-logins.sh --runs 3 --attempts 100000
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/benchlogins "$@"
