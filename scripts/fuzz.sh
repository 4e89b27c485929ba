#!/usr/bin/env bash
# Runs every Fuzz* target in the repository for a bounded time each, one
# after another, and copies the corpus each one grew (Go keeps it in
# $GOCACHE/fuzz) into the package's testdata/fuzz/<Target>, where the normal
# `go test` replays it as seeds; commit what it adds. A target that finds a
# crash fails the script; Go writes the crashing input to testdata/fuzz too.
#
#   ./scripts/fuzz.sh                    # 20 s per target
#   ./scripts/fuzz.sh --seconds 60 --only FuzzParseLogs
#   ./scripts/fuzz.sh --keep 50          # at most 50 new corpus files per target (smallest first)
#   ./scripts/fuzz.sh ./intake ./logline # only the targets under these directories
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20 keep=100 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -*) echo "usage: $0 [--seconds N] [--keep N] [--only FuzzName] [dir ...]" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- .

cache="$(go env GOCACHE)/fuzz"
failed=()
mapfile -t files < <(grep -rlE --include='*_test.go' --exclude-dir=node_modules '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' "$@" | sort)
for file in "${files[@]}"; do
  dir=$(dirname "$file")
  pkg=$(go list "$dir")
  for target in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(f \*testing\.F\).*/\1/p' "$file"); do
    if [ -n "$only" ] && [ "$target" != "$only" ]; then continue; fi
    echo "== $pkg $target (${seconds}s)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "${seconds}s" "$dir"; then
      failed+=("$pkg $target")
    fi
    src="$cache/$pkg/$target"
    if [ -d "$src" ]; then
      dst="$dir/testdata/fuzz/$target"
      mkdir -p "$dst"
      before=$(ls "$dst" | wc -l)
      ls -Sr "$src" | head -n "$keep" | while read -r f; do cp -n "$src/$f" "$dst/"; done
      echo "   corpus: $(( $(ls "$dst" | wc -l) - before )) new files in $dst"
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: crash found in %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz: no crash"
