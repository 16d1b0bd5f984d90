#!/bin/bash
# bench/reconcile-canon-diff.sh OLD NEW TRACECMP: bench/reconcile-diff.sh's cases (test logs,
# captures, both; five option sets), for a change of reconcile's output order or numbering only
# (rc10): stderr and exit code must be identical; text and binary traces either identical or
# the same messages (bench/tracecmp: multiset by names, warnings) with every reordered position
# between messages of one time.
O=$(realpath "$1"); N=$(realpath "$2"); C=$(realpath "$3"); d=$(mktemp -d); fail=0; cnt=0; same=0; canon=0
cd "$(dirname "$0")/.."
inputs=("reconcile/testdata/logs/testbed" "reconcile/testdata/logs/loopback" "reconcile/testdata/logs/testbed reconcile/testdata/logs/damaged.sclog.zst reconcile/testdata/logs/foreign.sclog")
for p in testdata/pcap/*; do inputs+=("$p"); done
inputs+=("testdata/pcap reconcile/testdata/logs/testbed")
# equiv A B: identical, or the same messages reordered only among equal times.
equiv() {
 cmp -s "$1" "$2" && return 0
 [ -s "$1" ] || return 1
 out=$($C "$1" "$2") || { echo "$out"; return 1; }
 echo "$out" | grep -q " 0 of them between messages of different times" || { echo "$out"; return 1; }
 return 2
}
for in in "${inputs[@]}"; do
 for opts in "" "--granularity process" "--aggregate-clients" "--recv-at last --split-gap 1ms" "--no-nat-detect --synced-clocks"; do
  cnt=$((cnt+1))
  $O reconcile $opts $in >$d/o.txt 2>$d/o.err; orc=$?
  $N reconcile $opts $in >$d/n.txt 2>$d/n.err; nrc=$?
  $O reconcile $opts -o $d/o.w5t $in 2>/dev/null; $N reconcile $opts -o $d/n.w5t $in 2>/dev/null
  equiv $d/o.txt $d/n.txt; t=$?; equiv $d/o.w5t $d/n.w5t; b=$?
  if [ $t = 1 ] || [ $b = 1 ] || ! cmp -s $d/o.err $d/n.err || [ $orc != $nrc ]; then
   echo "DIFF: $opts $in (text $t binary $b rc $orc/$nrc)"; fail=$((fail+1))
  elif [ $t = 0 ] && [ $b = 0 ]; then same=$((same+1))
  else canon=$((canon+1)); [ $t = 2 ] && echo "text reordered/renumbered: $opts $in"
  fi
 done
done
echo "$cnt cases: $same identical, $canon same messages in another order or numbering, $fail differ"; rm -rf $d
