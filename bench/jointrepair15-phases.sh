#!/bin/sh
# Interleaved BenchmarkLinkPhases runs of linking test binaries on the
# CoDeeN-sized trace (order alternates every round): per run, the J4 steps,
# their sum, J5 refit p2 and J5c settled, and the linking total (CPU-s).
# usage: bench/jointrepair15-phases.sh ROUNDS A.test B.test [TRACE]
rounds=$1 a=$2 b=$3 tr=${4:-/tmp/inputs/codeen.bin}
cd "$(dirname "$0")/../linking" || exit 1
one() {
	WAP5_BENCH_TRACE=$tr WAP5_BENCH_TOP=0 WAP5_BENCH_LEAN=1 WAP5_BENCH_DROP=1 WAP5_BENCH_RESERVE=950 \
		"$1" -test.run XXX -test.bench LinkPhases -test.benchtime 1x 2>&1 |
		awk -v t="$(basename "$1")" -v l="$(cut -d' ' -f1 /proc/loadavg)" '
		/^J4 /{j4+=$(NF-5); s=s sprintf(" %s=%s", $2, $(NF-5))}
		/^J5 refit p2|^J5 refit p1/{r=r sprintf(" %s%s=%s", $2, $3, $(NF-5))}
		/^J5c settled/{r=r sprintf(" settled=%s", $(NF-5))}
		/^J2 count priors/{r=r sprintf(" priors=%s", $(NF-5))}
		/^linking total/{tot=$3}
		END{printf "%s load=%s J4=%.3f%s |%s total=%s\n", t, l, j4, s, r, tot}'
}
i=0
while [ $i -lt "$rounds" ]; do
	if [ $((i % 2)) -eq 0 ]; then one "$a"; one "$b"; else one "$b"; one "$a"; fi
	i=$((i + 1))
done
