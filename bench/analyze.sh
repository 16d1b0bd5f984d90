#!/usr/bin/env bash
# Cost of `wap5 analyze` (the whole pipeline in one process) against the
# same stages run as separate commands with files in between (the baseline:
# reconcile -o, skew -o, link --json --instances, nest --json), on logs of
# the demo's real system (curl → nginx → python3 app → redis) captured once
# with REQUESTS requests.
#
#   bench/analyze.sh [RUNS] [REQUESTS]     (defaults 5 and 20000)
#
# Reports CPU (user+sys), wall time and peak RSS per run and their medians,
# and the stage times `wap5 analyze` prints. Writes bench/results-analyze.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-5}
REQUESTS=${2:-20000}
OUT=$ROOT/bench/results-analyze.md
CACHE=${WAP5_BENCH_CACHE:-/tmp/wap5-bench-cache}/analyze-$REQUESTS
mkdir -p "$CACHE"
make -s bin/wap5 bin/libsockcap.so
WAP5=$ROOT/bin/wap5
if [ ! -d "$CACHE/demo/logs" ]; then
  echo "analyze bench: capturing $REQUESTS demo requests into $CACHE/demo (one-off)" >&2
  rm -rf "$CACHE/demo"
  DEMO_DIR=$CACHE/demo REQUESTS=$REQUESTS scripts/demo.sh >"$CACHE/demo.out" 2>&1
fi
LOGS=$CACHE/demo/logs
W=$CACHE/work
mkdir -p "$W"

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# measure NAME CMD...: one run; appends "cpu wall rss_kb" to $W/NAME.
measure() {
  local name=$1
  shift
  /usr/bin/time -o "$W/time.txt" -f '%U %S %e %M' "$@" >/dev/null 2>"$W/stderr.txt"
  tail -1 "$W/time.txt" | awk '{printf "%.3f %.3f %d\n", $1+$2, $3, $4}' >>"$W/$name"
}


rm -f "$W/analyze" "$W/staged"
stages=""
for _ in $(seq "$RUNS"); do
  measure analyze "$WAP5" analyze -q --skew always -o "$W/report" "$LOGS"
  stages="$stages$(grep '^wap5: analyze:' "$W/stderr.txt")"$'\n'
  # The staged baseline: four processes; CPU and wall summed, RSS the largest.
  : >"$W/staged.one"
  for step in "reconcile -o $W/raw.bin $LOGS" "skew -o $W/cor.bin --binary $W/raw.bin" \
    "link --json --instances $W/inst.jsonl $W/cor.bin" "nest --json $W/cor.bin"; do
    # shellcheck disable=SC2086
    /usr/bin/time -o "$W/time.txt" -f '%U %S %e %M' "$WAP5" $step >/dev/null 2>/dev/null
    tail -1 "$W/time.txt" >>"$W/staged.one"
  done
  awk '{c+=$1+$2; w+=$3; if ($4>m) m=$4} END {printf "%.3f %.3f %d\n", c, w, m}' "$W/staged.one" >>"$W/staged"
done

msgs=$(grep -c . "$W/report/trace.txt" || true)
msgs=$((msgs - 1))
col() { awk -v c="$2" '{print $c}' "$W/$1" | median; }
{
  echo "# wap5 analyze: whole pipeline in one process vs. the stages as separate commands"
  echo
  echo "Command: \`bench/analyze.sh $RUNS $REQUESTS\` ($(date -u +%Y-%m-%d)); machine: $(nproc) cores,"
  echo "$(lscpu | grep 'Model name' | sed 's/  */ /g'), shared with other jobs."
  echo
  echo "Input: the logs of \`make demo\`'s system (curl → nginx → python3 app → redis on loopback,"
  echo "4 nodes, 6 processes) for $REQUESTS requests: $msgs messages after reconciling."
  echo "\`wap5 analyze -q --skew always\` (clock offsets applied, as on several hosts) against"
  echo "\`reconcile -o raw.bin; skew -o cor.bin --binary; link --json --instances; nest --json\`."
  echo "Medians of $RUNS runs; staged: CPU and wall summed over the four commands, RSS their largest."
  echo
  echo "| | CPU s | wall s | peak RSS MB |"
  echo "|---|---|---|---|"
  echo "| wap5 analyze | $(col analyze 1) | $(col analyze 2) | $(awk '{print $3/1024}' "$W/analyze" | median) |"
  echo "| staged commands | $(col staged 1) | $(col staged 2) | $(awk '{print $3/1024}' "$W/staged" | median) |"
  echo
  echo "Per run (cpu s, wall s, RSS kB): analyze"
  echo
  sed 's/^/    /' "$W/analyze"
  echo
  echo "staged"
  echo
  sed 's/^/    /' "$W/staged"
  echo
  echo "Stage times printed by wap5 analyze:"
  echo
  printf '%s' "$stages" | sed 's/^/    /'
} >"$OUT"
cat "$OUT"
