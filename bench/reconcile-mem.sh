#!/usr/bin/env bash
# bench/reconcile-mem.sh — does `wap5 reconcile` keep its memory flat as the
# trace grows? Real libsockcap logs of bench/reconcile-load.c (a client and a
# forked server, 16 loopback TCP connections) with 1M, 3M and 10M messages,
# reconciled by each wap5 binary given (e.g. a build of the base commit and
# this tree's), runs interleaved; prints every run and the medians of CPU
# (user+sys) and peak RSS (/usr/bin/time), bytes per message, and checks that
# every binary wrote the same bytes (binary trace cmp, text md5).
#
#   bench/reconcile-mem.sh WORKDIR [WAP5...]   (default bin/wap5)
#   SIZES="1000000 3000000 10000000" RUNS="7 5 3" TEXT=1 to also time text output
#
# The logs are made once in WORKDIR (logsN, about 4 bytes per message) with
# this tree's bin/libsockcap.so; outputs go to WORKDIR too.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:?usage: reconcile-mem.sh WORKDIR [WAP5...]}; shift
[ $# -gt 0 ] || set -- "$PWD/bin/wap5"
sizes=(${SIZES:-1000000 3000000 10000000})
runs=(${RUNS:-7 5 3})
mkdir -p "$work"
work=$(cd "$work" && pwd)
make -s bin/wap5 bin/libsockcap.so
${CC:-cc} -O2 -Wall -Wextra -o "$work/load" bench/reconcile-load.c
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for i in "${!sizes[@]}"; do
	n=${sizes[$i]}
	r=${runs[$i]:-3}
	logs="$work/logs$n"
	[ -d "$logs" ] || bin/wap5 run --out "$logs" --node bench -- "$work/load" "$n" 16 >/dev/null
	for ((j = 1; j <= r; j++)); do
		b=0
		for bin in "$@"; do
			b=$((b + 1))
			/usr/bin/time -f "%U %S %M" -o "$work/t" "$bin" reconcile -o "$work/out$b.w5t" "$logs"
			read -r u s m <"$work/t"
			echo "$n bin$b run$j cpu $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') rss_kib $m" | tee -a "$work/runs.$n.$b"
		done
	done
	b=0
	for bin in "$@"; do
		b=$((b + 1))
		cpu=$(awk '{print $5}' "$work/runs.$n.$b" | med)
		rss=$(awk '{print $7}' "$work/runs.$n.$b" | med)
		awk -v n="$n" -v b="$b" -v bin="$bin" -v cpu="$cpu" -v rss="$rss" -v r="$r" 'BEGIN {
			printf "%-9d %-40s median of %d: cpu %.2f s = %.2f M msgs/CPU-s, peak RSS %.1f MiB = %.0f B/msg\n", n, bin, r, cpu, n/cpu/1e6, rss/1024, rss*1024/n }'
		rm -f "$work/runs.$n.$b"
		if [ "$b" -gt 1 ]; then
			cmp -s "$work/out1.w5t" "$work/out$b.w5t" && echo "  binary trace identical to bin1's" || echo "  BINARY TRACE DIFFERS from bin1's"
		fi
	done
	if [ -n "${TEXT:-}" ]; then
		b=0
		for bin in "$@"; do
			b=$((b + 1))
			/usr/bin/time -f "%U %S %M" -o "$work/t" "$bin" reconcile -o "$work/out$b.txt" "$logs"
			read -r u s m <"$work/t"
			echo "$n text bin$b cpu $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') rss_kib $m md5 $(md5sum <"$work/out$b.txt" | cut -c1-12)"
			rm -f "$work/out$b.txt"
		done
	fi
done
