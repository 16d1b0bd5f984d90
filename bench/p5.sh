#!/usr/bin/env bash
# Project 5 Table 1 and Figure 23 on this machine: CPU seconds of wap5 nest and
# wap5 convolve on generated multi-tier traces (median of RUNS runs, user+sys
# CPU, since the 2-core machine is shared), and the correlation cost against
# the number of quanta S (Go benchmark). Results: bench/results-p5.md.
#
# BASE=<git rev> also builds wap5 at that revision and runs it side by side
# with the work tree's (runs alternate, so both see the same load).
# Set WAP5_P5_INPROC=1 for the in-process benchmarks on the same traces
# (BenchmarkNestFile, BenchmarkConvolveFile: CPU ms per run without reading;
# BenchmarkNestEndToEnd: read + check + nest, msgs per CPU-second, on the
# text and the binary form of mt-long).
set -euo pipefail
# Build as the Makefile does (urfave_cli_no_docs: without it urfave/cli links its man-page and
# markdown writers, ~6 ms and ~80 page faults more per command), unless GOFLAGS is set.
export GOFLAGS=${GOFLAGS:--mod=mod -tags=urfave_cli_no_docs}
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/wap5-p5-bench}
RUNS=${RUNS:-3}
BASE=${BASE:-}
mkdir -p "$OUT"
go build -o "$OUT/wap5" ./cmd/wap5
W=$OUT/wap5
bins=("$W")
if [ -n "$BASE" ]; then
  rm -rf "$OUT/base-src" && mkdir -p "$OUT/base-src"
  git archive "$BASE" | tar -x -C "$OUT/base-src"
  (cd "$OUT/base-src" && go build -o "$OUT/wap5-base" ./cmd/wap5)
  bins=("$OUT/wap5-base" "$W")
fi
G=testdata/gen
gen() { [ -s "$OUT/$1.trace" ] || "$W" gen -o "$OUT/$1.trace" "${@:2}"; }
gen mt-normal --parallel 2 --duration 500s $G/multitier.gen
gen mt-config --duration 500s $G/multitier.gen
gen mt-long --parallel 2 --duration 5000s $G/multitier.gen
gen mt-par45 --parallel 220 --duration 50s $G/multitier.gen
# The same traces in the binary form (wap5 gen --binary, same seed).
genb() { [ -s "$OUT/$1.bin" ] || "$W" gen --binary -o "$OUT/$1.bin" "${@:2}"; }
genb mt-long --parallel 2 --duration 5000s $G/multitier.gen
genb mt-par45 --parallel 220 --duration 50s $G/multitier.gen
# Project 5 Table 1's size at its parallelism: 2.03M messages at 1.6 (binary
# only: 2,029,192 messages at parallelism 1.53).
genb mt-p5 --parallel 3 --duration 14050s $G/multitier.gen
# run1 TAG CMD...: one run; appends "cpu algo" (user+sys CPU of the whole
# command, and the algorithm's own time as it prints it on stderr, "(123ms)",
# wall clock without reading the trace) to $OUT/TAG.runs.
run1() {
  local tag=$1; shift
  /usr/bin/time -f "%U %S" -o "$OUT/time" "$@" > /dev/null 2> "$OUT/err"
  local a
  a=$(sed -n 's/.*(\([0-9.]*\)\(m\?s\))$/\1 \2/p' "$OUT/err" | awk '{print ($2=="ms") ? $1/1000 : $1}')
  echo "$(awk '{print $1+$2}' "$OUT/time") $a" >> "$OUT/$tag.runs"
}
# measure TAG CMD...: RUNS runs of CMD under every binary, alternating;
# TAG.<i>.runs holds binary i's.
measure() {
  local tag=$1; shift
  for i in "${!bins[@]}"; do rm -f "$OUT/$tag.$i.runs"; done
  for _ in $(seq "$RUNS"); do
    for i in "${!bins[@]}"; do run1 "$tag.$i" "${bins[$i]}" "$@"; done
  done
}
# med TAG I: "median CPU / best algo" of binary I's runs
med() {
  sort -n "$OUT/$1.$2.runs" | awk '{c[NR]=$1} END {printf "%s", c[int((NR+1)/2)]}'
  printf " / "
  sort -n -k2 "$OUT/$1.$2.runs" | head -1 | awk '{printf "%s", $2}'
}
# both TAG: "base → new" or just "new"
both() {
  if [ -n "$BASE" ]; then echo "$(med "$1" 0) → $(med "$1" 1)"; else med "$1" 0; fi
}
echo "Commands: wap5 nest --json T; wap5 convolve --json --quantum 0.01 T. Cells: median CPU s (whole command, with reading) / best algorithm wall s${BASE:+; base ($BASE) → work tree}"
echo
echo "| trace | messages | par. | nest | nest M msgs/s (algorithm, best wall) | nest M msgs/CPU-s end to end (median) | convolve μ=10 ms | correlations |"
echo "|---|---|---|---|---|---|---|---|"
for t in mt-normal mt-config mt-long mt-par45; do
  tr=$OUT/$t.trace
  msgs=$(grep -vc '^#' "$tr")
  measure "$t-nest" nest --json "$tr"
  par=$(sed -n 's/.*parallelism \([0-9.]*\),.*/\1/p' "$OUT/err")
  last=$((${#bins[@]} - 1))
  na=$(sort -n -k2 "$OUT/$t-nest.$last.runs" | head -1 | awk '{print $2}')
  rate=$(awk -v m="$msgs" -v a="$na" 'BEGIN{printf "%.2f", m/a/1e6}')
  if [ "$t" = mt-long ] || [ "$t" = mt-par45 ]; then cv="-"; corr="-"; else
    measure "$t-conv" convolve --json --quantum 0.01 "$tr"
    corr=$(sed -n 's/.* \([0-9]*\) correlations.*/\1/p' "$OUT/err")
    cv=$(both "$t-conv")
  fi
  e2e=$(sort -n "$OUT/$t-nest.$last.runs" | awk -v m="$msgs" '{c[NR]=$1} END {printf "%.2f", m/c[int((NR+1)/2)]/1e6}')
  echo "| $t | $msgs | $par | $(both "$t-nest") | $rate | $e2e | $cv | $corr |"
done
# End to end on the binary form (read + check + nest, the whole command).
# A base older than the binary version these files have cannot read them:
# BIN_BASE=0 skips it.
if [ "${BIN_BASE:-1}" = 0 ] && [ -n "$BASE" ]; then bins=("$W"); fi
for t in mt-long mt-par45 mt-p5; do
  tr=$OUT/$t.bin
  measure "$t-nestbin" nest --json "$tr"
  msgs=$(sed -n 's/^wap5: nest: \([0-9]*\) messages.*/\1/p' "$OUT/err")
  last=$((${#bins[@]} - 1))
  na=$(sort -n -k2 "$OUT/$t-nestbin.$last.runs" | head -1 | awk '{print $2}')
  rate=$(awk -v m="$msgs" -v a="$na" 'BEGIN{printf "%.2f", m/a/1e6}')
  e2e=$(sort -n "$OUT/$t-nestbin.$last.runs" | awk -v m="$msgs" '{c[NR]=$1} END {printf "%.2f", m/c[int((NR+1)/2)]/1e6}')
  cell=$(if [ ${#bins[@]} -gt 1 ]; then both "$t-nestbin"; else med "$t-nestbin" 0; fi)
  par=$(sed -n 's/.*parallelism \([0-9.]*\),.*/\1/p' "$OUT/err")
  echo "| $t (binary) | $msgs | $par | $cell | $rate | $e2e | - | - |"
done
echo
echo "Figure 23 (one cross-correlation by FFT against S = T/μ):"
go test -run XXX -bench 'Correlate' -benchtime 20x -count 3 ./convolution | grep Benchmark
echo
echo "In-process (Go benchmarks, wall clock):"
go test -run XXX -bench 'Nest$|Convolve$' -benchtime 5x -count 3 ./nesting ./convolution | grep Benchmark
if [ -n "${WAP5_P5_INPROC:-}" ]; then
  echo
  echo "In-process on the traces above (cpu-ms/op = CPU per run, without reading):"
  for t in mt-long mt-par45; do
    WAP5_NEST_TRACE=$OUT/$t.trace go test -run XXX -bench NestFile -benchtime 10x -count "$RUNS" ./nesting | grep Benchmark | sed "s/^/$t /"
  done
  for f in mt-long.trace mt-long.bin; do
    WAP5_NEST_TRACE=$OUT/$f go test -run XXX -bench NestEndToEnd -benchtime 5x -count "$RUNS" ./nesting | grep Benchmark | sed "s/^/$f /"
  done
  WAP5_CONVOLVE_TRACE=$OUT/mt-config.trace go test -run XXX -bench ConvolveFile -benchtime 3x -count "$RUNS" ./convolution | grep Benchmark | sed "s/^/mt-config /"
fi
