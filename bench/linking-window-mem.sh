#!/usr/bin/env bash
# Peak memory and CPU of the streaming linker as the trace grows 10×
# (issue #4): interleaved rounds of two wap5 binaries (base, then new, per
# input and method) over `link --window 60s --json`, one line per run:
#   round input method build user sys maxrss_kib elapsed load1 load5 load15
# Round 1 keeps the outputs and compares them (cmp: "identical" or
# "DIFFERENT" lines), later rounds write to /dev/null.
#   bench/linking-window-mem.sh BASE_WAP5 NEW_WAP5 [ROUNDS] > log
# Environment: INPUTS (default /tmp/inputs: codeen10 and codeen, .txt and
# .bin), METHODS (default "joint wap5"), FILES (default "codeen10.txt
# codeen10.bin codeen.txt codeen.bin"), OUT (round 1's outputs; default a
# temporary directory, removed).
set -euo pipefail
base=$1 new=$2 rounds=${3:-3}
inputs=${INPUTS:-/tmp/inputs}
out=${OUT:-}
if [[ -z $out ]]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
for r in $(seq 1 "$rounds"); do
	for f in ${FILES:-codeen10.txt codeen10.bin codeen.txt codeen.bin}; do
		for m in ${METHODS:-joint wap5}; do
			for b in base new; do
				bin=$base
				[[ $b == new ]] && bin=$new
				dst=/dev/null
				[[ $r == 1 ]] && dst=$out/$f.$m.$b.json
				/usr/bin/time -f '%U %S %M %E' -o "$out/time" "$bin" link --window 60s --json --method "$m" "$inputs/$f" >"$dst" 2>"$out/$f.$m.$b.err"
				echo "$r $f $m $b $(cat "$out/time") $(cut -d' ' -f1-3 /proc/loadavg)"
			done
			if [[ $r == 1 ]]; then
				if cmp -s "$out/$f.$m.base.json" "$out/$f.$m.new.json" && cmp -s "$out/$f.$m.base.err" "$out/$f.$m.new.err"; then
					echo "# $f $m: identical"
				else
					echo "# $f $m: DIFFERENT"
				fi
			fi
		done
	done
done
