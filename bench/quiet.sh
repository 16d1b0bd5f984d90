#!/usr/bin/env bash
# bench/quiet.sh — the side-by-side "quiet run": one build against a base
# build, interleaved (base, new, base, new …) on the inputs the issues'
# targets name, on an otherwise idle machine.
#
#   bench/quiet.sh NEW BASE INPUTS [RUNS]      (RUNS default 2)
#
# NEW, BASE: two wap5 binaries. INPUTS: a directory holding
#   logsfull/   CoDeeN-sized sealed libsockcap logs (bench/codeenlogs on codeen.txt)
#   lo1m/       1M loopback messages (bench/reconcile-load.c under `wap5 run`)
#   codeen.txt, codeen.bin      `wap5 gen [--binary] testdata/gen/codeen.gen`
#   codeen10.txt, codeen10.bin  the same with --duration 360s (a tenth)
#   mt.txt                      `wap5 gen --duration 600s testdata/gen/multitier.gen`
# Each line: case, binary, user and sys CPU seconds, peak RSS KiB, md5 of
# the output (first 8 hex digits), load average. Medians are for the reader.
# CASES=REGEX runs only the cases whose names match (e.g. CASES='^link-codeen').
set -uo pipefail
new=$1 base=$2 in=$3 runs=${4:-2} only=${CASES:-.}
work=$(mktemp -d /tmp/quiet.XXXXXX)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
one() { # one CASE BIN OUTFILE ARGS...
	local c=$1 b=$2 out=$3; shift 3
	rm -f "$out"
	/usr/bin/time -f "%U %S %M" -o "$work/t" "$b" "$@" >"$work/stdout" 2>/dev/null
	[ -s "$out" ] || out=$work/stdout
	echo "$c $(basename "$b") $(cat "$work/t") md5 $(md5sum <"$out" | cut -c1-8) load $(load)"
}
pair() { # pair CASE OUTFILE ARGS...
	local c=$1 out=$2; shift 2
	[[ $c =~ $only ]] || return 0
	for _ in $(seq "$runs"); do
		one "$c" "$base" "$out" "$@"
		one "$c" "$new" "$out" "$@"
	done
}
echo "start $(date -u +%H:%M:%S) load $(load) $(nproc) cores"
pair reconcile-full "$work/o.w5t" reconcile -o "$work/o.w5t" "$in/logsfull"
pair reconcile-lo1m "$work/o.w5t" reconcile -o "$work/o.w5t" "$in/lo1m"
pair link-codeen-wap5-json - link --method wap5 --json "$in/codeen.bin"
pair link-codeen-wap5-text - link --method wap5 "$in/codeen.bin"
pair link-codeen-joint-json - link --json "$in/codeen.bin"
pair link-codeen-joint-text-txt - link "$in/codeen.txt"
pair link-codeen-joint-json-txt - link --json "$in/codeen.txt"
pair link-mt-joint - link --json "$in/mt.txt"
pair link-mt-wap5 - link --method wap5 --json "$in/mt.txt"
for m in joint wap5; do
	for f in codeen10.txt codeen.txt codeen10.bin codeen.bin; do
		pair "window-$m-$f" - link --method $m --window 60s --json "$in/$f"
	done
done
echo "end $(date -u +%H:%M:%S) load $(load)"
