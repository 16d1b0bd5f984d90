#!/usr/bin/env bash
# Byte-identity of `wap5 link` (joint) between two binaries on the big
# inputs of brief jointfront16: codeen.bin, codeen10.txt, codeen10.bin and
# mt.txt, each --json and text, plain, with --instances F (F compared) and
# with --window 60s; stdout, stderr and exit status. Exit status 1 on any
# difference.
#   bench/jointfront16-identical.sh OLD_WAP5 NEW_WAP5
# Environment: TMPDIR; INPUTS (default /tmp/inputs).
set -uo pipefail
old=$1 new=$2
inputs=${INPUTS:-/tmp/inputs}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
same=0 diff=0
for f in codeen.bin codeen10.txt codeen10.bin mt.txt; do
	for fmt in --json ""; do
		for extra in plain inst win; do
			for v in old new; do
				bin=$old
				[[ $v == new ]] && bin=$new
				args=(link)
				[[ -n $fmt ]] && args+=("$fmt")
				[[ $extra == inst ]] && args+=(--instances "$d/$v.inst")
				[[ $extra == win ]] && args+=(--window 60s)
				"$bin" "${args[@]}" "$inputs/$f" >"$d/$v.out" 2>"$d/$v.err"
				echo $? >"$d/$v.rc"
				[[ $extra == inst ]] || : >"$d/$v.inst"
			done
			ok=1
			for x in out err rc inst; do
				cmp -s "$d/old.$x" "$d/new.$x" || { ok=0; echo "DIFF $x: $f ${fmt:-text} $extra"; }
			done
			if ((ok)); then
				same=$((same + 1))
				echo "same: $f ${fmt:-text} $extra ($(md5sum <"$d/new.out" | cut -c1-8) $(md5sum <"$d/new.err" | cut -c1-8) rc=$(cat "$d/new.rc"))"
			else
				diff=$((diff + 1))
			fi
			rm -f "$d"/*.out "$d"/*.inst # (codeen.bin's outputs are hundreds of MB)
		done
	done
done
echo "same $same, different $diff"
((diff == 0))
