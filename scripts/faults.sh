#!/usr/bin/env bash
# The fault suite: builds ingest and breaks it on purpose on loopback, under
# load from the load generator, reading everything back at the end.
#
#   ./scripts/faults.sh --quick              # about 5 minutes: 3 kill cycles, 10 s outage, 2-minute soak
#   ./scripts/faults.sh                      # 10 kill cycles, 30 s outage, 30-minute soak
#   ./scripts/faults.sh --only kill9,outage  # some runs only (kill9, outage, fleet, soak); --cycles N, --outage D, --minutes M
#   ./scripts/faults.sh --only fleet         # 4 instances on one Azurite: kill, stop, drain, freeze (about 1 minute)
#
# Exit status 1 when an event was lost or duplicated or a request hung.
# Needs Azurite (installed by ./scripts/test.sh, or `npm ci`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/azurite ]; then
  echo "faults.sh: cannot find Azurite at node_modules/.bin/azurite: run ./scripts/test.sh or npm ci first" >&2
  exit 2
fi
exec go run ./scripts/faults "$@"
