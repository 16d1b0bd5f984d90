#!/bin/bash
# bench/mem16-pairs.sh OLD NEW PAIRS ARGS...: OLD and NEW interleaved
# (old, new, old, new ...), PAIRS pairs of `wap5 ARGS`; per run: huge page
# faults (machine-wide thp_fault_alloc delta: other processes add to it),
# user and sys CPU seconds, peak RSS (KiB), minor faults, stdout md5.
# ALTERNATE=1 swaps the order every pair (old new, new old, ...): a run
# reuses the memory the run before it freed (cheaper to fault in on this
# guest), so the second of a fixed order would be favoured.
OLD=$1 NEW=$2 PAIRS=$3; shift 3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
one() { # label bin args...
	local label=$1
	local a b
	a=$(awk '/^thp_fault_alloc/{print $2}' /proc/vmstat)
	local bin=$2; shift 2
	/usr/bin/time -f "%U %S %M %R" -o "$W/t" "$bin" "$@" >"$W/o" 2>/dev/null
	b=$(awk '/^thp_fault_alloc/{print $2}' /proc/vmstat)
	echo "$label thp $((b-a)) cpu $(cat "$W/t") md5 $(md5sum <"$W/o" | cut -c1-8) load $(cut -d' ' -f1 /proc/loadavg)"
}
for i in $(seq "$PAIRS"); do
	if [ "${ALTERNATE:-0}" = 1 ] && [ $((i % 2)) = 0 ]; then
		one new "$NEW" "$@"
		one old "$OLD" "$@"
	else
		one old "$OLD" "$@"
		one new "$NEW" "$@"
	fi
done
