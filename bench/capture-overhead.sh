#!/usr/bin/env bash
# capture-overhead.sh — what libsockcap adds per intercepted call, side by side
# with no preload, `strace -f -e trace=network` and `ltrace`, pinned to one CPU,
# the variants interleaved round by round, medians reported; then bytes per
# event on disk (unsealed and sealed) for a request/response load.
#   bench/capture-overhead.sh [ROUNDS]        (default 7)
# Writes the table to stdout; bench/results-capture.md quotes a run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-7}
CPU=${CPU:-1}
make -s bin/libsockcap.so
LIB=$PWD/bin/libsockcap.so
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -Wall -Werror -o "$TMP/bench" bench/capture-bench.c
go build -o "$TMP/logsize" ./bench/capture-logsize

# calls per run: the slow tracers get fewer iterations (ns per call is per call)
declare -A N=([none]=200000 [libsockcap]=200000 [strace]=10000 [ltrace]=2000)
run() { # variant mode -> ns per call
	local v=$1 m=$2 n=${N[$1]}
	case $v in
	none) taskset -c "$CPU" "$TMP/bench" "$m" "$n" ;;
	libsockcap) rm -rf "$TMP/logs"; SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$LIB taskset -c "$CPU" "$TMP/bench" "$m" "$n" ;;
	strace) taskset -c "$CPU" strace -f -e trace=network -o /dev/null "$TMP/bench" "$m" "$n" ;;
	ltrace) taskset -c "$CPU" ltrace -f -o /dev/null "$TMP/bench" "$m" "$n" ;;
	esac</dev/null | awk -v k="${KEY:-ns_per_call}" 'k == "all" || $1 == k'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "# capture overhead: $(date -u +%FT%TZ), $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), pinned to CPU $CPU, $ROUNDS rounds"
echo
echo "Wall: wall-clock time of the loop per call. User: user-space CPU time per call"
echo "(getrusage; what an in-process interposer adds shows here with less noise from"
echo "other load; strace/ltrace work in another process, so only wall time counts for them)."
echo
echo "| workload | variant | median wall ns/call | added wall ns/call | median user ns/call | added user ns/call |"
echo "|---|---|---|---|---|---|"
for mode in pair udp file; do
	declare -A res=() ures=()
	for r in $(seq "$ROUNDS"); do
		for v in none libsockcap strace ltrace; do
			if [ "$mode" = file ] && [ "$v" != none ] && [ "$v" != libsockcap ]; then continue; fi
			out=$(KEY=all run $v $mode)
			res[$v]+="$(echo "$out" | awk '$1=="ns_per_call"{print $2}') "
			ures[$v]+="$(echo "$out" | awk '$1=="user_ns_per_call"{print $2}') "
		done
	done
	base=$(echo ${res[none]} | tr ' ' '\n' | median)
	ubase=$(echo ${ures[none]} | tr ' ' '\n' | median)
	for v in none libsockcap strace ltrace; do
		[ -n "${res[$v]:-}" ] || continue
		m=$(echo ${res[$v]} | tr ' ' '\n' | median)
		u=$(echo ${ures[$v]} | tr ' ' '\n' | median)
		if [ "$v" = strace ] || [ "$v" = ltrace ]; then
			printf '| %s | %s | %.1f | %+.1f | - | - |\n' "$mode" "$v" "$m" "$(echo "$m - $base" | bc -l)"
		else
			printf '| %s | %s | %.1f | %+.1f | %.1f | %+.1f |\n' "$mode" "$v" "$m" "$(echo "$m - $base" | bc -l)" "$u" "$(echo "$u - $ubase" | bc -l)"
		fi
	done
	unset res ures
done

if command -v valgrind >/dev/null; then
	echo
	echo "Instructions per call (valgrind --tool=callgrind, user space, deterministic): the"
	echo "difference between 40000 and 20000 iterations, divided by the calls made."
	echo
	echo "| workload | no preload | libsockcap | added |"
	echo "|---|---|---|---|"
	ir() { # preload mode n -> instructions
		rm -rf "$TMP/logs"
		if [ "$1" = yes ]; then
			SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$LIB valgrind --tool=callgrind --callgrind-out-file=/dev/null "$TMP/bench" "$2" "$3" 2>&1
		else
			valgrind --tool=callgrind --callgrind-out-file=/dev/null "$TMP/bench" "$2" "$3" 2>&1
		fi | awk '/Collected/ {gsub(",", "", $4); print $4}'
	}
	for mode in pair udp file; do
		calls=2; [ "$mode" = file ] && calls=1
		a=$(( ($(ir no $mode 40000) - $(ir no $mode 20000)) / (20000 * calls) ))
		b=$(( ($(ir yes $mode 40000) - $(ir yes $mode 20000)) / (20000 * calls) ))
		echo "| $mode | $a | $b | +$((b - a)) |"
	done
fi

echo
echo "Bytes per event on disk (request/response over TCP loopback, random sizes, 20000 round trips):"
rm -rf "$TMP/logs"
SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$LIB "$TMP/bench" reqresp 20000 >/dev/null
echo "- libsockcap: $("$TMP/logsize" "$TMP/logs")"
strace -f -ttt -e trace=network -o "$TMP/strace.txt" "$TMP/bench" reqresp 20000 >/dev/null
lines=$(wc -l <"$TMP/strace.txt")
read -r _ plain _ z < <("$TMP/logsize" -zstd "$TMP/strace.txt")
printf -- '- strace -f -ttt -e trace=network: %d lines, %.1f B/event plain, %.2f B/event zstd\n' "$lines" "$(echo "$plain/$lines" | bc -l)" "$(echo "$z/$lines" | bc -l)"
rm -rf "$TMP/logs"
SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$LIB "$TMP/bench" pair 200000 >/dev/null
echo "- libsockcap, send/recv loop over a socketpair: $("$TMP/logsize" "$TMP/logs")"
