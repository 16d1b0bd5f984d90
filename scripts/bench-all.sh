#!/usr/bin/env bash
# Runs every benchmark script under bench/ in turn (`make bench`); each writes
# its own bench/results-*.md, summarised by hand in bench/RESULTS.md.
# Long: tens of minutes on a 2-core machine. Needs root for the server and
# capture benchmarks (nginx, redis, tcpdump).
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
for b in bench/*.sh; do
  echo "== $b" >&2
  bash "$b" || failed+=("$b")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench-all: failed: ${failed[*]}" >&2
  exit 1
fi
