#!/usr/bin/env bash
# Linking performance: the CoDeeN-sized generated trace (testdata/gen/codeen.gen,
# 4.7M messages, 115 proxies, one hour — WAP5 Table 5's size) linked by both
# methods, CPU seconds and peak memory (medians of RUNS runs); messages per
# CPU-second; the joint linker on a 360 s slice; and the streaming mode's peak
# memory as the trace grows 10× (with and without --instances).
# Environment: RUNS (default 3), WAP5 (binary; built when unset), TMPDIR,
# CODEEN_METHODS (default "wap5 joint"; the joint linker takes minutes there).
#   bench/linking.sh     # about 5 minutes on 2 cores
set -euo pipefail
# Build as the Makefile does (urfave_cli_no_docs: without it urfave/cli links its man-page and
# markdown writers, ~6 ms and ~80 page faults more per command), unless GOFLAGS is set.
export GOFLAGS=${GOFLAGS:--mod=mod -tags=urfave_cli_no_docs}
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z "${WAP5:-}" ]]; then
	WAP5=$tmp/wap5
	go build -o "$WAP5" ./cmd/wap5
fi
echo "machine: $(nproc) cores, $(lscpu | grep 'Model name' | sed 's/Model name: *//'), $(date -u +%Y-%m-%dT%H:%MZ)"

# measure LABEL CMD...: median user+sys CPU seconds and peak RSS (MB) of RUNS runs.
measure() {
	local label=$1
	shift
	local cpus=() mems=() u s m
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err"
		read -r u s m <"$tmp/time"
		cpus+=("$(echo "$u + $s" | bc)")
		mems+=("$((m / 1024))")
	done
	local cpu mem
	cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
	mem=$(printf '%s\n' "${mems[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
	echo "$label cpu_s=$cpu rss_mb=$mem (runs: ${cpus[*]})"
}

"$WAP5" gen -o "$tmp/codeen.txt" testdata/gen/codeen.gen
n=$(grep -vc '^#' "$tmp/codeen.txt")
echo "codeen trace: $n messages"
"$WAP5" gen --binary -o "$tmp/codeen.bin" testdata/gen/codeen.gen
for method in ${CODEEN_METHODS:-wap5 joint}; do
	measure "codeen link --method $method --top 100 (read text + link)" "$WAP5" link --method "$method" --json --top 100 "$tmp/codeen.txt"
	measure "codeen link --method $method --top 100 (read binary + link)" "$WAP5" link --method "$method" --json --top 100 "$tmp/codeen.bin"
done
# Linking alone (the trace already in memory), Go benchmark.
WAP5_BENCH_TRACE=$tmp/codeen.bin go test -run XXX -bench 'LinkGen/wap5' -benchtime 1x -count 3 ./linking | grep Benchmark

# The joint linker on a 360 s slice of the CoDeeN-sized trace (≈ 470k
# messages), read + link and linking alone (Go benchmark).
"$WAP5" gen --binary --duration 360s -o "$tmp/slice.bin" testdata/gen/codeen.gen
measure "codeen 360s slice link --method joint --top 100 (read binary + link)" "$WAP5" link --json --top 100 "$tmp/slice.bin"
WAP5_BENCH_TRACE=$tmp/slice.bin go test -run XXX -bench 'LinkGen/joint' -benchtime 1x -count 3 ./linking | grep Benchmark

# Streaming memory as the trace grows 10×, with and without --instances
# (streamed instances are spooled to a file next to the output).
for d in 60s 600s; do
	"$WAP5" gen --duration "$d" -o "$tmp/mt.txt" testdata/gen/multitier.gen
	m=$(grep -vc '^#' "$tmp/mt.txt")
	measure "multitier $d ($m messages) link --window 30s" "$WAP5" link --window 30s --json "$tmp/mt.txt"
	measure "multitier $d ($m messages) link --window 30s --instances" "$WAP5" link --window 30s --json --instances "$tmp/inst.jsonl" "$tmp/mt.txt"
	measure "multitier $d ($m messages) link (whole trace)" "$WAP5" link --json "$tmp/mt.txt"
done
