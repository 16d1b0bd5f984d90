#!/bin/sh
# Interleaved pairs of `wap5 link ARGS` timings: base, new, base, new ...
# usage: bench/wapagg17-pairs.sh BASE NEW PAIRS ARGS...
# Prints one line per run: label user sys maxrss_KiB minor_faults thp_fresh
base=$1 new=$2 n=$3; shift 3
i=0
while [ $i -lt $n ]; do
  for b in base new; do
    eval bin=\$$b
    a=$(awk '/^thp_fault_alloc/{print $2}' /proc/vmstat)
    /usr/bin/time -o /tmp/wapagg17-time.$$ -f '%U %S %M %R' "$bin" link "$@" >/dev/null 2>/dev/null
    t=$(cat /tmp/wapagg17-time.$$)
    c=$(awk '/^thp_fault_alloc/{print $2}' /proc/vmstat)
    echo "$b $t $((c-a))"
  done
  i=$((i+1))
done
rm -f /tmp/wapagg17-time.$$
