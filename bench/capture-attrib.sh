#!/usr/bin/env bash
# capture-attrib.sh — where the whole-process CPU that libsockcap adds per call
# goes: the loops of capture-overhead.sh, timed inside one process by
# bench/capture-paired.c (batches through the preloaded functions alternate
# with batches through libc's own; CPU time per batch, paired differences),
# with no preload (the null: both kinds of batch call libc), the floor interposer (bench/capture-floor.c: forwards the calls
# through dlsym'd pointers, nothing else), the floor touching K more 4 KiB
# pages per call (the price of a page after a system call), libsockcap built
# with the bench-only ablations of libsockcap/c/sockcap.h, and libsockcap as
# the Makefile builds it — all interleaved round by round, pinned to one CPU.
#
#   bench/capture-attrib.sh [ROUNDS]          default 9 rounds
#   BATCHES=<n> ITERS=<n> CPU=<cpu> MODES="pair udp udpconn"
#   VARIANTS="none floor ..."                 a subset, in this order
#   BASE_REV=<rev>                            adds "base": libsockcap of that commit
#
# Each process runs BATCHES (400) pairs of batches of ITERS (250) iterations
# and reports the median paired difference per call; the table gives the
# median over the rounds (one process per variant per round) and every round.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-9}
CPU=${CPU:-1}
MODES=${MODES:-pair udp udpconn}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BATCHES=${BATCHES:-400}
ITERS=${ITERS:-250}
cc -O2 -Wall -Werror -o "$TMP/paired" bench/capture-paired.c -ldl
LIBFLAGS="-O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -Wl,--version-script=libsockcap/c/exports.map"
lib() { # name cflags...
	local n=$1
	shift
	# shellcheck disable=SC2086
	cc $LIBFLAGS "$@" -o "$TMP/$n.so" libsockcap/c/*.c -ldl -lpthread
}
for k in 0 1 2 4 8; do
	n=floor; [ $k -gt 0 ] && n=floor+${k}p
	cc -O2 -Wall -Werror -fPIC -shared -fvisibility=hidden -DTOUCH_PAGES=$k -o "$TMP/$n.so" bench/capture-floor.c -ldl
done
lib norec-noclock -DSC_ABLATE_NORECORD -DSC_ABLATE_NOCLOCK
lib norec -DSC_ABLATE_NORECORD
lib staticbuf -DSC_ABLATE_STATICBUF
lib noclock -DSC_ABLATE_NOCLOCK
lib nofd -DSC_ABLATE_NOFD
lib stop1 -DSC_ABLATE_STOP=1
lib stop2 -DSC_ABLATE_STOP=2
lib noaddr -DSC_ABLATE_NOADDR
lib norec-noclock-noaddr -DSC_ABLATE_NORECORD -DSC_ABLATE_NOCLOCK -DSC_ABLATE_NOADDR
make -s bin/libsockcap.so
cp bin/libsockcap.so "$TMP/libsockcap.so"
if [ -n "${BASE_REV:-}" ]; then
	mkdir -p "$TMP/base"
	git archive "$BASE_REV" libsockcap/c | tar -x -C "$TMP/base"
	(cd "$TMP/base" && cc -O2 -g -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=libsockcap/c/exports.map -o "$TMP/base.so" libsockcap/c/*.c -ldl -lpthread)
fi
DEFAULT="none floor floor+1p floor+2p floor+4p floor+8p norec-noclock norec noclock nofd staticbuf libsockcap"
[ -n "${BASE_REV:-}" ] && DEFAULT="$DEFAULT base"
VARIANTS=${VARIANTS:-$DEFAULT}

run() { # variant mode -> "added libc" ns per call
	local v=$1 m=$2
	rm -rf "$TMP/logs"
	if [ "$v" = none ]; then
		taskset -c "$CPU" "$TMP/paired" "$m" "$BATCHES" "$ITERS"
	else
		SOCKCAP_DIR=$TMP/logs LD_PRELOAD=$TMP/$v.so taskset -c "$CPU" "$TMP/paired" "$m" "$BATCHES" "$ITERS"
	fi </dev/null | awk '$1 == "added_median_ns" {a = $2} $1 == "libc_median_ns" {c = $2} END {print a, c}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "# capture attribution: $(date -u +%FT%TZ), $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), pinned to CPU $CPU, $ROUNDS rounds, $BATCHES x $ITERS iterations, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| workload | variant | libc cpu ns/call (median) | **added ns/call** (median of rounds) | added per round |"
echo "|---|---|---|---|---|"
for mode in $MODES; do
	declare -A c=() d=()
	for r in $(seq "$ROUNDS"); do
		for v in $VARIANTS; do
			read -r a b < <(run "$v" "$mode")
			d[$v]+="$a "
			c[$v]+="$b "
		done
	done
	for v in $VARIANTS; do
		m=$(echo ${c[$v]} | tr ' ' '\n' | median)
		a=$(echo ${d[$v]} | tr ' ' '\n' | median)
		printf '| %s | %s | %.1f | **%+.1f** | %s |\n' "$mode" "$v" "$m" "$a" \
			"$(for x in ${d[$v]}; do printf '%.0f ' "$x"; done)"
	done
	unset c d
done
