#!/usr/bin/env bash
# Peak RSS and wall time of `wap5 reconcile` on a capture with many threads
# (libsockcap reader: threads decoded lazily). Usage:
#   bench/reader-threads.sh [LOGDIR] [BINARY...]
# LOGDIR defaults to the 20 000-request demo capture; BINARY to bin/wap5.
# Each binary runs RUNS times (default 3); prints every run and the medians.
set -euo pipefail
logs=${1:-/tmp/netns-bench/cache/analyze-20000/demo/logs}
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=(bin/wap5)
runs=${RUNS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for b in "${bins[@]}"; do
	rss=() wall=()
	for ((i = 0; i < runs; i++)); do
		/usr/bin/time -v "$b" reconcile -o "$out/t.w5t" "$logs" >/dev/null 2>"$out/time"
		r=$(awk -F': ' '/Maximum resident/ {print $2}' "$out/time")
		w=$(awk -F': ' '/Elapsed \(wall/ {print $2}' "$out/time")
		echo "$b run $i: peak RSS ${r} KiB, wall $w"
		rss+=("$r") wall+=("$w")
	done
	med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	echo "$b median: peak RSS $(med "${rss[@]}") KiB, wall $(printf '%s\n' "${wall[@]}" | sort | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
	sha256sum "$out/t.w5t" | awk -v b="$b" '{print b " trace sha256 " $1}'
done
