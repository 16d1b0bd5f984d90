#!/bin/sh
# Interleaved `wap5 link --json` runs of two binaries on one trace (order
# alternates every round): user, sys, user+sys CPU-s and peak RSS KiB.
# usage: bench/jointrepair15-cli.sh ROUNDS OLD_WAP5 NEW_WAP5 [TRACE]
rounds=$1 a=$2 b=$3 tr=${4:-/tmp/inputs/codeen.bin}
one() {
	l=$(cut -d' ' -f1 /proc/loadavg)
	/usr/bin/time -f '%U %S %M' -o /tmp/jr15-time.$$ "$1" link --json "$tr" >/dev/null 2>&1
	read -r u s m </tmp/jr15-time.$$
	echo "$(basename "$1") load=$l user=$u sys=$s cpu=$(echo "$u + $s" | bc) rss=$m"
}
i=0
while [ "$i" -lt "$rounds" ]; do
	if [ $((i % 2)) -eq 0 ]; then one "$a"; one "$b"; else one "$b"; one "$a"; fi
	i=$((i + 1))
done
rm -f /tmp/jr15-time.$$
