#!/usr/bin/env bash
# Runs every Go fuzz target for a while (`make fuzz FUZZTIME=30s`); crashers
# that `go test -fuzz` finds land in the package's testdata/fuzz/ and are then
# replayed by plain `go test` (and so by `make test`). New interesting inputs
# are minimised for at most FUZZMINIMIZE (default 5s) each: with go's default
# (60s) the targets with kilobyte seeds (the binary trace's, zstd frames)
# spend most of a short run minimising and report 0 execs/sec meanwhile.
set -uo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
failed=()
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f ($t)" >&2
    go test "$pkg" -run '^$' -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime "${FUZZMINIMIZE:-5s}" || failed+=("$pkg.$f")
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz-all: failed: ${failed[*]}" >&2
  exit 1
fi
