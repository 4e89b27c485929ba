#!/usr/bin/env bash
# Measures several instances on one Azurite (started here, on loopback):
# the live tail across instances (acceptance-to-delivery latency, what it
# costs between instances, the membership's storage requests per instance
# per minute) and one user attacked over six instances (the busiest
# partition-second read back from the day table). Bounded; stops by itself.
# Needs Azurite (npm ci). Not part of the test suite.
#
#   ./scripts/cluster.sh                                   # both: 60 s tail, 20 s attack
#   ./scripts/cluster.sh --only hot --hot-duration 60s
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/azurite ]; then
  echo "cluster.sh: cannot find Azurite at node_modules/.bin/azurite: run npm ci first" >&2
  exit 2
fi
exec go run ./scripts/cluster "$@"
