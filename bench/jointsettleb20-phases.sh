#!/bin/bash
# Interleaved phase benchmarks of two linking test binaries on codeen.bin
# (built with `go test -c` in linking/): prints each run's J4 phases of the
# repair pass (CPU-s) and their sum.
# Usage: bench/jointsettleb20-phases.sh OLD.test NEW.test N [TRACE]
set -e
old=$1 new=$2 n=${3:-3} tr=${4:-/tmp/inputs/codeen.bin}
run() {
	WAP5_BENCH_TRACE=$tr WAP5_BENCH_TOP=0 WAP5_BENCH_LEAN=1 WAP5_BENCH_DROP=1 WAP5_BENCH_RESERVE=600 \
		"$1" -test.run XXX -test.bench LinkPhases -test.benchtime 1x 2>&1 |
		awk -v who="$2" '/^J4 .* p2 /{v=$(NF-5); s+=v; d=d sprintf(" %s=%s", $2, v)} /^linking total/{t=$3}
			END{printf "%s repair=%.3f total=%s%s\n", who, s, t, d}'
}
cd "$(dirname "$0")/../linking"
for i in $(seq "$n"); do
	if ((i % 2)); then run "$old" old; run "$new" new; else run "$new" new; run "$old" old; fi
done
