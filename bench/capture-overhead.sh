#!/usr/bin/env bash
# capture-overhead.sh — what libsockcap adds per intercepted call, side by side
# with no preload, the floor of any interposer (bench/capture-floor.c: the calls
# forwarded through dlsym'd pointers, nothing else), `strace -f -e
# trace=network` and `ltrace`, pinned to one CPU,
# the variants interleaved round by round, medians reported; the library's own
# code alone (system calls stubbed); instruction counts; then bytes per event
# on disk (unsealed and sealed) for a request/response load.
#
#   bench/capture-overhead.sh [ROUNDS]     ROUNDS (or RUNS) rounds, default 7
#   QUICK=1 bench/capture-overhead.sh      3 rounds, fewer iterations, no ltrace (~1 min)
#   BASE_REV=<git rev> bench/capture-overhead.sh
#                                          also the library of that commit, interleaved
#                                          with the others ("libsockcap@<rev>")
#   N=<iterations> CPU=<cpu>               per run (default 200000), pinned CPU (default 1)
#
# Workloads (bench/capture-bench.c): pair = send+recv on a Unix stream socketpair; udp =
# sendto+recv on unconnected UDP sockets (the library asks the kernel for each sender);
# udpconn = send+recv on connected UDP sockets; file = write to /dev/null (non-socket path).
# Three time measures per call, each as "added" against no preload in the same round:
# - wall: the loop's wall-clock time (noisy on a shared machine);
# - cpu: the process's user + system CPU time (CLOCK_PROCESS_CPUTIME_ID: the
#   scheduler's exact runtime); everything capture costs shows here — its code,
#   its log pages' faults, the kernel's copy of a datagram's sender;
# - user: getrusage user time. This kernel splits user/system time by sampling
#   at the tick (CONFIG_TICK_CPU_ACCOUNTING, HZ=250): a 0.2 s run has a handful
#   of user ticks, so this column moves by ~10 ns per tick. Kept for history.
# And the library's code alone: bench/capture-stub.c runs the wrappers with the
# system calls replaced by stubs (min and median over batches; the least noisy
# time figure), and callgrind's user-space instruction counts (exact).
# Writes the tables to stdout; bench/results-capture.md quotes runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${QUICK:-}" ]; then
	ROUNDS=${1:-${RUNS:-3}}
	N=${N:-100000}
else
	ROUNDS=${1:-${RUNS:-7}}
	N=${N:-200000}
fi
CPU=${CPU:-1}
make -s bin/libsockcap.so
LIB=$PWD/bin/libsockcap.so
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -Wall -Werror -o "$TMP/bench" bench/capture-bench.c
cc -O2 -Wall -Werror -fPIC -shared -fvisibility=hidden -o "$TMP/floor.so" bench/capture-floor.c -ldl
go build -o "$TMP/logsize" ./bench/capture-logsize
LIBSRC="libsockcap/c/config.c libsockcap/c/encode.c libsockcap/c/fdtable.c libsockcap/c/segment.c"
# shellcheck disable=SC2086
cc -O2 -fvisibility=hidden -o "$TMP/stub" bench/capture-stub.c $LIBSRC -ldl -lpthread

VARIANTS="none floor libsockcap strace ltrace"
[ -n "${QUICK:-}" ] && VARIANTS="none floor libsockcap strace"
BASE_LIB=
if [ -n "${BASE_REV:-}" ]; then
	mkdir -p "$TMP/base/bench"
	git archive "$BASE_REV" libsockcap/c | tar -x -C "$TMP/base"
	cp bench/capture-stub.c "$TMP/base/bench/"
	(cd "$TMP/base" && cc -O2 -g -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=libsockcap/c/exports.map -o "$TMP/base.so" libsockcap/c/*.c -ldl -lpthread &&
		cc -O2 -fvisibility=hidden -o "$TMP/stub-base" bench/capture-stub.c $LIBSRC -ldl -lpthread)
	BASE_LIB=$TMP/base.so
	VARIANTS="none floor base libsockcap ${VARIANTS#none floor libsockcap }"
fi
label() { if [ "$1" = base ]; then echo "libsockcap@$BASE_REV"; else echo "$1"; fi; }

# calls per run: the slow tracers get fewer iterations (ns per call is per call)
declare -A ITER=([none]=$N [floor]=$N [libsockcap]=$N [base]=$N [strace]=$((N / 20)) [ltrace]=$((N / 100)))
run() { # variant mode -> the benchmark's output
	local v=$1 m=$2 n=${ITER[$1]}
	case $v in
	none) taskset -c "$CPU" "$TMP/bench" "$m" "$n" ;;
	floor) LD_PRELOAD=$TMP/floor.so taskset -c "$CPU" "$TMP/bench" "$m" "$n" ;;
	libsockcap) rm -rf "$TMP/logs"; SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$LIB taskset -c "$CPU" "$TMP/bench" "$m" "$n" ;;
	base) rm -rf "$TMP/logs"; SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$BASE_LIB taskset -c "$CPU" "$TMP/bench" "$m" "$n" ;;
	strace) taskset -c "$CPU" strace -f -e trace=network -o /dev/null "$TMP/bench" "$m" "$n" ;;
	ltrace) taskset -c "$CPU" ltrace -f -o /dev/null "$TMP/bench" "$m" "$n" ;;
	esac </dev/null
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { awk -v k="$1" '$1 == k {print $2}'; }

echo "# capture overhead: $(date -u +%FT%TZ), $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), pinned to CPU $CPU, $ROUNDS rounds, $N iterations, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Per call, medians over the rounds; \"added\" is against no preload. wall: wall-clock time;"
echo "cpu: user + system CPU time (exact); user: getrusage user time (tick-sampled, see the script)."
echo "strace/ltrace work in another process: only wall time counts for them."
echo
echo "| workload | variant | wall ns | added wall | cpu ns | **added cpu** | user ns | added user |"
echo "|---|---|---|---|---|---|---|---|"
for mode in pair udp udpconn file; do
	declare -A res=() cres=() ures=()
	for r in $(seq "$ROUNDS"); do
		for v in $VARIANTS; do
			case $mode-$v in file-strace | file-ltrace | file-floor) continue ;; esac
			out=$(run "$v" "$mode")
			res[$v]+="$(field ns_per_call <<<"$out") "
			cres[$v]+="$(field cpu_ns_per_call <<<"$out") "
			ures[$v]+="$(field user_ns_per_call <<<"$out") "
		done
	done
	base=$(echo ${res[none]} | tr ' ' '\n' | median)
	cbase=$(echo ${cres[none]} | tr ' ' '\n' | median)
	ubase=$(echo ${ures[none]} | tr ' ' '\n' | median)
	for v in $VARIANTS; do
		[ -n "${res[$v]:-}" ] || continue
		m=$(echo ${res[$v]} | tr ' ' '\n' | median)
		c=$(echo ${cres[$v]} | tr ' ' '\n' | median)
		u=$(echo ${ures[$v]} | tr ' ' '\n' | median)
		if [ "$v" = strace ] || [ "$v" = ltrace ]; then
			printf '| %s | %s | %.1f | %+.1f | - | - | - | - |\n' "$mode" "$v" "$m" "$(echo "$m - $base" | bc -l)"
		else
			printf '| %s | %s | %.1f | %+.1f | %.1f | **%+.1f** | %.1f | %+.1f |\n' "$mode" "$(label "$v")" "$m" \
				"$(echo "$m - $base" | bc -l)" "$c" "$(echo "$c - $cbase" | bc -l)" "$u" "$(echo "$u - $ubase" | bc -l)"
		fi
	done
	unset res cres ures
done

echo
echo "Whole-process CPU added per call, measured inside one process (bench/capture-paired.c: batches"
echo "of 250 iterations through the preloaded functions alternate with batches through libc's own,"
echo "400 pairs, CPU time per batch; median of the paired differences per process, then the median"
echo "over $ROUNDS processes per variant, interleaved; \"none\": no preload, both kinds of batch call libc):"
echo
echo "| workload | variant | added ns/call (median of processes) | per process |"
echo "|---|---|---|---|"
cc -O2 -Wall -Werror -o "$TMP/paired" bench/capture-paired.c -ldl
for mode in pair udp udpconn; do
	declare -A pres=()
	for r in $(seq "$ROUNDS"); do
		for v in none floor base libsockcap; do
			lib=
			case $v in
			floor) lib=$TMP/floor.so ;;
			base) [ -n "$BASE_LIB" ] || continue; lib=$BASE_LIB ;;
			libsockcap) lib=$LIB ;;
			esac
			rm -rf "$TMP/logs"
			pres[$v]+="$(SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$lib taskset -c "$CPU" "$TMP/paired" "$mode" 400 250 </dev/null | field added_median_ns) "
		done
	done
	for v in none floor base libsockcap; do
		[ -n "${pres[$v]:-}" ] || continue
		m=$(echo ${pres[$v]} | tr ' ' '\n' | median)
		printf '| %s | %s | **%+.1f** | %s |\n' "$mode" "$(label "$v")" "$m" "${pres[$v]% }"
	done
	unset pres
done
rm -rf "$TMP/logs"

echo
echo "The library's code alone (bench/capture-stub.c: the wrappers with sendto/send/recvfrom/recv"
echo "replaced by stubs; log written for real; 64-byte payloads; $((ROUNDS * 15)) batches of 20000"
echo "iterations, each timed through the library and through the stubs directly, alternating):"
echo
echo "| workload | variant | added ns/call, min over batches | added ns/call, median of batches |"
echo "|---|---|---|---|"
for mode in pair udp; do
	for v in base libsockcap; do
		s=$TMP/stub
		if [ "$v" = base ]; then [ -n "$BASE_LIB" ] || continue; s=$TMP/stub-base; fi
		rm -rf "$TMP/logs"
		out=$(SOCKCAP_DIR=$TMP/logs taskset -c "$CPU" "$s" "$mode" $((ROUNDS * 15)) 20000)
		printf '| %s | %s | %s | **%s** |\n' "$mode" "$(label "$v")" "$(field added_min_ns <<<"$out")" "$(field added_median_ns <<<"$out")"
	done
done
rm -rf "$TMP/logs"

if command -v valgrind >/dev/null; then
	echo
	echo "Instructions per call (valgrind --tool=callgrind, user space, deterministic): the"
	echo "difference between 40000 and 20000 iterations, divided by the calls made. Under valgrind"
	echo "clock_gettime is a system call (~10 instructions), natively the vDSO (~50 more) or, with"
	echo "the TSC clock (FORMAT.md, \"Time\"), ~14 instructions; the library runs with SOCKCAP_CLOCK=vdso here."
	echo
	echo "| workload | no preload | libsockcap | added |$([ -n "$BASE_LIB" ] && echo " libsockcap@$BASE_REV | added |")"
	echo "|---|---|---|---|$([ -n "$BASE_LIB" ] && echo "---|---|")"
	ir() { # lib-or-empty mode n -> instructions
		rm -rf "$TMP/logs"
		if [ -n "$1" ]; then
			# SOCKCAP_CLOCK=vdso: valgrind has no vDSO and runs the clock so slowly that
			# the TSC clock would give up on it after a few reads; both libraries then
			# read the clock the same way (a system call here)
			SOCKCAP_CLOCK=vdso SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$TMP/bench" "$2" "$3" 2>&1
		else
			valgrind --tool=callgrind --callgrind-out-file=/dev/null "$TMP/bench" "$2" "$3" 2>&1
		fi | awk '/Collected/ {gsub(",", "", $4); print $4}'
	}
	for mode in pair udp udpconn file; do
		calls=2; [ "$mode" = file ] && calls=1
		a=$(( ($(ir "" $mode 40000) - $(ir "" $mode 20000)) / (20000 * calls) ))
		b=$(( ($(ir "$LIB" $mode 40000) - $(ir "$LIB" $mode 20000)) / (20000 * calls) ))
		extra=
		if [ -n "$BASE_LIB" ]; then
			o=$(( ($(ir "$BASE_LIB" $mode 40000) - $(ir "$BASE_LIB" $mode 20000)) / (20000 * calls) ))
			extra=" $o | +$((o - a)) |"
		fi
		echo "| $mode | $a | $b | **+$((b - a))** |$extra"
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
rm -rf "$TMP/logs"
SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$LIB "$TMP/bench" udp 200000 >/dev/null
echo "- libsockcap, sendto/recv loop over UDP: $("$TMP/logsize" "$TMP/logs")"
