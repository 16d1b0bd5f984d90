#!/usr/bin/env bash
# Byte-identity of `wap5 link` (joint, the default) between two binaries on
# the inputs of brief jointrepair15: the CoDeeN-sized trace and its tenth,
# mt.txt; gen's pathological scenarios, cdn and multitier(-delay) at 120 s.
# Each: --json and text, with --instances F (F compared), and --window 60s;
# stdout, stderr and exit status. Exit status 1 on any difference.
#   bench/jointrepair15-identical.sh OLD_WAP5 NEW_WAP5
# Environment: TMPDIR; INPUTS (default /tmp/inputs); BIG=0 skips codeen.bin.
set -uo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
inputs=${INPUTS:-/tmp/inputs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
traces=()
for g in children-0-2 children-d-cc children-parallel penalty-breaker cdn multitier multitier-delay; do
	f=testdata/gen/$g.gen
	[[ -f $f ]] || { echo "missing $f"; exit 2; }
	"$new" gen --duration 120s -o "$tmp/$g.txt" "$f" || exit 2
	traces+=("$tmp/$g.txt")
done
for f in mt.txt codeen10.txt codeen10.bin; do traces+=("$inputs/$f"); done
[[ ${BIG:-1} == 1 ]] && traces+=("$inputs/codeen.bin")
same=0 diff=0
for t in "${traces[@]}"; do
	for opts in "--json" "" "--window 60s --json" "--window 60s"; do
		for v in old new; do
			bin=$old
			[[ $v == new ]] && bin=$new
			# shellcheck disable=SC2086
			"$bin" link $opts --instances "$tmp/$v.inst" "$t" >"$tmp/$v.out" 2>"$tmp/$v.err"
			echo $? >"$tmp/$v.rc"
		done
		ok=1
		for x in out err rc inst; do
			cmp -s "$tmp/old.$x" "$tmp/new.$x" || { ok=0; echo "DIFF $x: $(basename "$t") $opts"; }
		done
		if ((ok)); then
			same=$((same + 1))
			echo "same: $(basename "$t") $opts ($(md5sum <"$tmp/new.out" | cut -c1-8) $(md5sum <"$tmp/new.inst" | cut -c1-8))"
		else
			diff=$((diff + 1))
		fi
	done
done
echo "identical $same, different $diff"
((diff == 0))
