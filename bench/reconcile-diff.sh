#!/bin/bash
# bench/reconcile-diff.sh OLD NEW: two wap5 binaries, reconcile on the test data (logs,
# captures, both), text, stderr, exit code and binary trace compared, under several options.
O=$(realpath "$1"); N=$(realpath "$2"); d=$(mktemp -d); fail=0; cnt=0
cd "$(dirname "$0")/.."
inputs=("reconcile/testdata/logs/testbed" "reconcile/testdata/logs/loopback" "reconcile/testdata/logs/testbed reconcile/testdata/logs/damaged.sclog.zst reconcile/testdata/logs/foreign.sclog")
for p in testdata/pcap/*; do inputs+=("$p"); done
inputs+=("testdata/pcap reconcile/testdata/logs/testbed")
for in in "${inputs[@]}"; do
 for opts in "" "--granularity process" "--aggregate-clients" "--recv-at last --split-gap 1ms" "--no-nat-detect --synced-clocks"; do
  cnt=$((cnt+1))
  $O reconcile $opts $in >$d/o.txt 2>$d/o.err; orc=$?
  $N reconcile $opts $in >$d/n.txt 2>$d/n.err; nrc=$?
  $O reconcile $opts -o $d/o.w5t $in 2>/dev/null; $N reconcile $opts -o $d/n.w5t $in 2>/dev/null
  if ! cmp -s $d/o.txt $d/n.txt || ! cmp -s $d/o.err $d/n.err || [ $orc != $nrc ] || ! cmp -s $d/o.w5t $d/n.w5t; then echo "DIFF: $opts $in"; fail=$((fail+1)); fi
 done
done
echo "$cnt cases, $fail differ"; rm -rf $d
