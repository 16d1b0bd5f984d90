#!/usr/bin/env bash
# bench/reconcile.sh — reconcile throughput and peak memory on real
# libsockcap logs, and the CoDeeN-sized synthetic matcher benchmark.
#
#   bench/reconcile.sh [MSGS [RUNS]]     default 1000000 messages, 5 runs
#
# 1. Builds bench/reconcile-load.c and runs it under `wap5 run`: a client and
#    a forked server, MSGS request/response messages over 16 loopback TCP
#    connections (real logs, sealed as wap5 run leaves them).
# 2. Runs `wap5 reconcile -o out.w5t` RUNS times under /usr/bin/time: CPU
#    (user+sys), peak RSS; prints the medians and per-message figures.
# 3. Where the CPU goes, in-process on the same logs (medians of 3):
#    BenchmarkDecodeLogs (libsockcap only), BenchmarkReconcileLogs (+ this
#    package), BenchmarkReconcileWrite (+ trace.WriteBinary).
# 4. Runs BenchmarkReconcileCoDeeN with WAP5_LONG=1 (4.7M messages, 115
#    hosts, synthetic observations fed to the matcher in-process) and
#    BenchmarkClockOffsets (the cost of the clock-offset pass on multi-host
#    events).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
msgs=${1:-1000000}
runs=${2:-5}
cd "$root"
make -s bin/wap5 bin/libsockcap.so
work=$(mktemp -d /tmp/reconcile-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
${CC:-cc} -O2 -Wall -Wextra -o "$work/load" bench/reconcile-load.c
bin/wap5 run --out "$work/logs" --node bench -- "$work/load" "$msgs" 16 >/dev/null
echo "logs: $(du -sb "$work/logs" | cut -f1) bytes (sealed)"
: >"$work/times"
for _ in $(seq "$runs"); do
	/usr/bin/time -f "%U %S %M %e" -a -o "$work/times" bin/wap5 reconcile -o "$work/out.w5t" "$work/logs"
done
n=$(bin/wap5 reconcile "$work/logs" 2>/dev/null | grep -vc '^#')
echo "messages: $n"
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
cpu=$(awk '{print $1+$2}' "$work/times" | med)
wall=$(awk '{print $4}' "$work/times" | med)
rss=$(awk '{print $3}' "$work/times" | med)
awk -v n="$n" -v cpu="$cpu" -v wall="$wall" -v rss="$rss" -v runs="$runs" 'BEGIN {
	printf "median of %d runs: cpu %.2f s (user+sys), wall %.2f s, peak RSS %.0f MB\n", runs, cpu, wall, rss/1024
	printf "  %.2f M messages per CPU-second, %.0f bytes per message peak RSS\n", n/cpu/1e6, rss*1024/n }'
echo "breakdown (in-process, CPU-s per run):"
WAP5_BENCH_LOGS="$work/logs" go test ./reconcile -run XXX -bench 'DecodeLogs|ReconcileLogs|ReconcileWrite' -benchtime 3x -count 3 | grep Benchmark
echo "matcher, CoDeeN-sized (synthetic observations, in-process):"
WAP5_LONG=1 go test ./reconcile -run XXX -bench ReconcileCoDeeN -benchtime 1x -count 3 | grep Benchmark
echo "clock-offset pass (multi-host events in memory, synchronised clocks):"
go test ./reconcile -run XXX -bench ClockOffsets -benchtime 3x -count 3 | grep Benchmark
