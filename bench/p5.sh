#!/usr/bin/env bash
# Project 5 Table 1 and Figure 23 on this machine: CPU seconds of wap5 nest and
# wap5 convolve on generated multi-tier traces (median of RUNS runs, user+sys
# CPU, since the 2-core machine is shared), and the correlation cost against
# the number of quanta S (Go benchmark). Results: bench/results-p5.md.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/wap5-p5-bench}
RUNS=${RUNS:-3}
mkdir -p "$OUT"
go build -o "$OUT/wap5" ./cmd/wap5
W=$OUT/wap5
G=testdata/gen
gen() { [ -s "$OUT/$1.trace" ] || "$W" gen -o "$OUT/$1.trace" "${@:2}"; }
gen mt-normal --parallel 2 --duration 500s $G/multitier.gen
gen mt-config --duration 500s $G/multitier.gen
gen mt-long --parallel 2 --duration 5000s $G/multitier.gen
gen mt-par45 --parallel 220 --duration 50s $G/multitier.gen
# cpu CMD...: median user+sys seconds over RUNS runs
cpu() {
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%U %S" -o "$OUT/time" "$@" > /dev/null 2> "$OUT/err"
    awk '{print $1+$2}' "$OUT/time"
  done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
# algo CMD...: the algorithm's own time as the command prints it on stderr
# ("(123ms)", wall clock without reading the trace), best of RUNS runs.
algo() {
  for _ in $(seq "$RUNS"); do
    "$@" > /dev/null 2> "$OUT/err"
    sed -n 's/.*(\([0-9.]*\)\(m\?s\))$/\1 \2/p' "$OUT/err" | awk '{print ($2=="ms") ? $1/1000 : $1}'
  done | sort -n | head -1
}
echo "| trace | messages | par. | nest CPU s (with reading) | nest alone, s (best wall) | nest M msgs/s | convolve μ=10 ms CPU s (with reading) | convolve alone, s | correlations |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in mt-normal mt-config mt-long mt-par45; do
  tr=$OUT/$t.trace
  msgs=$(grep -vc '^#' "$tr")
  n=$(cpu "$W" nest --json "$tr")
  par=$(sed -n 's/.*parallelism \([0-9.]*\),.*/\1/p' "$OUT/err")
  na=$(algo "$W" nest --json "$tr")
  rate=$(awk -v m="$msgs" -v a="$na" 'BEGIN{printf "%.2f", m/a/1e6}')
  if [ "$t" = mt-long ] || [ "$t" = mt-par45 ]; then cv="-"; ca="-"; corr="-"; else
    cv=$(cpu "$W" convolve --json --quantum 0.01 "$tr")
    corr=$(sed -n 's/.* \([0-9]*\) correlations.*/\1/p' "$OUT/err")
    ca=$(algo "$W" convolve --json --quantum 0.01 "$tr")
  fi
  echo "| $t | $msgs | $par | $n | $na | $rate | $cv | $ca | $corr |"
done
echo
echo "Figure 23 (one cross-correlation by FFT against S = T/μ):"
go test -run XXX -bench 'Correlate' -benchtime 20x -count 3 ./convolution | grep Benchmark
echo
echo "In-process (Go benchmarks, wall clock):"
go test -run XXX -bench 'Nest|Convolve$' -benchtime 5x -count 3 ./nesting ./convolution | grep Benchmark
