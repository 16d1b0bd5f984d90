#!/usr/bin/env bash
# Generation speed of `wap5 gen` on the CoDeeN-sized configuration
# (testdata/gen/codeen.gen: 4,702,865+ messages, 115 traced proxies, one hour;
# WAP5 Table 2), and the speed of `wap5 score`.
#
#   bench/gen.sh [RUNS]        (default 5)
#
# Per run: wall time, CPU (user+sys, all threads, GC included) and max RSS of
#   1. wap5 gen -o FILE           (text, streamed to a file)
#   2. wap5 gen > /dev/null       (text, formatting only)
#   3. wap5 gen --binary -o FILE  (whole trace in memory, then the binary form)
# with medians, and the Go benchmark of score.Score on the multi-tier trace.
# Writes bench/results-gen.md.
set -euo pipefail
# Build as the Makefile does (urfave_cli_no_docs: without it urfave/cli links its man-page and
# markdown writers, ~6 ms and ~80 page faults more per command), unless GOFLAGS is set.
export GOFLAGS=${GOFLAGS:--mod=mod -tags=urfave_cli_no_docs}
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-5}
OUT=$ROOT/bench/results-gen.md
CACHE=${WAP5_BENCH_CACHE:-/tmp/wap5-bench-cache}
mkdir -p "$CACHE"
WAP5=$CACHE/wap5-gen
go build -o "$WAP5" ./cmd/wap5
CFG=testdata/gen/codeen.gen

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
msgs=$("$WAP5" gen --json "$CFG" | awk -F'[:,]' '/"messages"/ && !done {gsub(/ /,"",$2); print $2; done=1}')

# run LABEL CMD...: RUNS timed runs; prints "cpu wall rss" lines
measure() {
  local out=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$CACHE/time.txt" -f '%U %S %e %M' "$@" >/dev/null 2>&1
    out="$out$(tail -1 "$CACHE/time.txt" | awk '{printf "%.2f %.2f %d\n", $1+$2, $3, $4}')"$'\n'
  done
  printf '%s' "$out"
}

row() { # label, lines
  local label=$1 lines=$2
  local cpus walls rss cm wm rm
  cpus=$(echo "$lines" | awk '{print $1}' | tr '\n' ' ')
  walls=$(echo "$lines" | awk '{print $2}' | tr '\n' ' ')
  cm=$(echo "$lines" | awk '{print $1}' | median)
  wm=$(echo "$lines" | awk '{print $2}' | median)
  rm=$(echo "$lines" | awk '{print $3}' | median)
  printf '| %s | %s | **%s** | %s | **%s** | %s | %.2f M | %.2f M |\n' "$label" "$walls" "$wm" "$cpus" "$cm" "$rm" \
    "$(echo "$msgs $wm" | awk '{print $1/$2/1e6}')" "$(echo "$msgs $cm" | awk '{print $1/$2/1e6}')"
}

text_file=$(measure sh -c "'$WAP5' gen -o '$CACHE/codeen.txt' '$CFG'")
text_null=$(measure sh -c "'$WAP5' gen '$CFG' > /dev/null")
binary=$(measure "$WAP5" gen --binary -o "$CACHE/codeen-gen.bin" "$CFG")
tsize=$(du -m "$CACHE/codeen.txt" | cut -f1)
bsize=$(du -m "$CACHE/codeen-gen.bin" | cut -f1)

scorebench=$(go test -run XXX -bench 'Score' -benchtime 5x -count 3 ./score/ | grep Benchmark)
load1=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# Trace generation (\`wap5 gen\`) and scoring (\`wap5 score\`)"
  echo
  echo "Target: generating the CoDeeN-sized trace well under 10 s."
  echo
  echo "- config: \`$CFG\` → $msgs messages, 115 traced proxies, 3000 untraced clients, 300 origins, 1 h of true time"
  echo "- machine: $(nproc) cores, $(lscpu | grep 'Model name' | sed 's/.*: *//'), shared with other engineers' work; $(date -u +%Y-%m-%d)"
  echo "- command: \`bench/gen.sh $RUNS\`; CPU = user + sys of the process (all threads, GC included); RSS = max resident set"
  echo "- load average (1/5/15 min) at the start: $load0; at the end: $load1 — on 2 cores, so wall times are"
  echo "  inflated by other work; CPU times are the stable measure"
  echo
  echo "| run | wall (s) per run | median wall | CPU (s) per run | median CPU | max RSS (KiB) | msgs/s wall | msgs/s CPU |"
  echo "|---|---|---|---|---|---|---|---|"
  row "\`wap5 gen -o codeen.txt\` (text, ${tsize} MB)" "$text_file"
  row "\`wap5 gen > /dev/null\` (text)" "$text_null"
  row "\`wap5 gen --binary -o codeen.bin\` (${bsize} MB)" "$binary"
  echo
  echo "The streaming text writer holds only instances in flight (its RSS is the window, not the trace);"
  echo "\`--binary\` builds the whole trace in memory first (300 MB of messages and a table of 2.35 M"
  echo "distinct endpoints: every call leaves from a fresh ephemeral port), then compresses it."
  echo
  echo "## score.Score (Go benchmark, multi-tier trace of 201,954 messages, a perfect result)"
  echo
  echo '```'
  echo "$scorebench"
  echo '```'
} > "$OUT"
cat "$OUT"
