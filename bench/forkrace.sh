#!/usr/bin/env bash
# bench/forkrace.sh — cost of holder tracking across fork (reconcile/holders.go)
# side by side with a baseline commit, on real libsockcap logs of a forked
# server (bench/reconcile-load.c: MSGS messages over 16 loopback connections).
#
#   bench/forkrace.sh [MSGS [RUNS [BASE]]]   default 1000000, 5, f1a8493~1
#
# Builds BASE's wap5 in a temporary git worktree, runs `wap5 reconcile` of
# both binaries alternately RUNS times under /usr/bin/time, prints medians of
# CPU (user+sys) and peak RSS, and checks that both traces are identical.
set -euo pipefail
# Build as the Makefile does (urfave_cli_no_docs: without it urfave/cli links its man-page and
# markdown writers, ~6 ms and ~80 page faults more per command), unless GOFLAGS is set.
export GOFLAGS=${GOFLAGS:--mod=mod -tags=urfave_cli_no_docs}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
msgs=${1:-1000000}
runs=${2:-5}
base=${3:-f1a8493~1}
cd "$root"
make -s bin/wap5
work=$(mktemp -d /tmp/forkrace-bench.XXXXXX)
trap 'git worktree remove --force "$work/base" 2>/dev/null || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base"
(cd "$work/base" && go build -o "$work/wap5-base" ./cmd/wap5)
cp bin/wap5 "$work/wap5-new"
${CC:-cc} -O2 -Wall -Wextra -o "$work/load" bench/reconcile-load.c
bin/wap5 run --out "$work/logs" --node bench -- "$work/load" "$msgs" 16 >/dev/null
for _ in $(seq "$runs"); do
	for v in base new; do
		/usr/bin/time -f "%U %S %M" -a -o "$work/times-$v" "$work/wap5-$v" reconcile -o "$work/out-$v.txt" "$work/logs"
	done
done
if cmp -s "$work/out-base.txt" "$work/out-new.txt"; then same=identical; else same=DIFFERENT; fi
n=$(grep -vc '^#' "$work/out-new.txt")
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for v in base new; do
	cpu=$(awk '{print $1+$2}' "$work/times-$v" | med)
	rss=$(awk '{print $3}' "$work/times-$v" | med)
	awk -v v="$v" -v n="$n" -v cpu="$cpu" -v rss="$rss" -v runs="$runs" 'BEGIN {
		printf "%-4s median of %d: cpu %.2f s, peak RSS %.0f MB, %.2f M msgs/CPU-s\n", v, runs, cpu, rss/1024, n/cpu/1e6 }'
done
echo "messages: $n; traces $same"
