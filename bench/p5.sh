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
# Reading the trace is part of the command; measure it alone too.
echo "| trace | messages | par. | read (CPU s) | nest (CPU s, incl. read) | nest M msgs/CPU-s (excl. read) | convolve μ=10 ms (CPU s) | correlations |"
echo "|---|---|---|---|---|---|---|---|"
for t in mt-normal mt-config mt-long mt-par45; do
  tr=$OUT/$t.trace
  msgs=$(grep -vc '^#' "$tr")
  read=$(cpu "$W" convolve --quantum 1000000 --max-depth 1 "$tr")
  n=$(cpu "$W" nest --json --histograms 100 "$tr")
  par=$(sed -n 's/.*parallelism \([0-9.]*\),.*/\1/p' "$OUT/err")
  rate=$(awk -v m="$msgs" -v a="$n" -v b="$read" 'BEGIN{d=a-b; if (d<=0) d=0.001; printf "%.2f", m/d/1e6}')
  if [ "$t" = mt-long ] || [ "$t" = mt-par45 ]; then cv="-"; corr="-"; else
    cv=$(cpu "$W" convolve --json --quantum 0.01 "$tr")
    corr=$(sed -n 's/.* \([0-9]*\) correlations.*/\1/p' "$OUT/err")
  fi
  echo "| $t | $msgs | $par | $read | $n | $rate | $cv | $corr |"
done
echo
echo "Figure 23 (one cross-correlation by FFT against S = T/μ):"
go test -run XXX -bench 'Correlate' -benchtime 20x -count 3 ./convolution | grep Benchmark
echo
echo "In-process (Go benchmarks, wall clock):"
go test -run XXX -bench 'Nest|Convolve$' -benchtime 5x -count 3 ./nesting ./convolution | grep Benchmark
