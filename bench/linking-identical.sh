#!/usr/bin/env bash
# Byte-identity check for linking optimisations: runs two wap5 binaries on
# generated traces and compares `link --json --top 100`, `--instances` and
# stderr (joint and wap5 methods), and `link --window` (streaming), with CPU
# seconds and peak RSS of each run. Exit status 1 on any difference.
#   bench/linking-identical.sh OLD_WAP5 NEW_WAP5     # about 1 minute on 2 cores
# Environment: TMPDIR; DUR (default 60s) for the small scenarios; SLICE
# (default 360s) for the CoDeeN-sized slice (empty: skip it).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
traces=()
for g in multitier multitier-delay cdn children-0-2 children-parallel penalty-breaker; do
	"$new" gen --duration "${DUR:-60s}" -o "$tmp/$g.txt" "testdata/gen/$g.gen"
	traces+=("$g.txt")
done
if [[ -n "${SLICE-360s}" ]]; then
	"$new" gen --binary --duration "${SLICE:-360s}" -o "$tmp/codeen.bin" testdata/gen/codeen.gen
	traces+=(codeen.bin)
fi
rc=0
run() { # run TAG BIN OUTPREFIX ARGS...
	local tag=$1 bin=$2 out=$3
	shift 3
	/usr/bin/time -f "%U %S %M" -o "$out.time" "$bin" "$@" >"$out.json" 2>"$out.err"
}
for t in "${traces[@]}"; do
	for m in joint wap5; do
		[[ $m == wap5 && $t == codeen.bin ]] && continue
		for v in old new; do
			bin=$old
			[[ $v == new ]] && bin=$new
			run "$v" "$bin" "$tmp/$t.$m.$v" link --method "$m" --json --top 100 --instances "$tmp/$t.$m.$v.inst" "$tmp/$t"
		done
		s=identical
		for x in json inst err; do
			cmp -s "$tmp/$t.$m.old.$x" "$tmp/$t.$m.new.$x" || { s="DIFFERENT ($x)"; rc=1; }
		done
		echo "$t $m: $s; old cpu/rss $(awk '{print $1+$2 " s " int($3/1024) " MB"}' "$tmp/$t.$m.old.time"), new $(awk '{print $1+$2 " s " int($3/1024) " MB"}' "$tmp/$t.$m.new.time")"
	done
done
for t in multitier.txt cdn.txt codeen.bin; do
	[[ -f $tmp/$t ]] || continue
	for v in old new; do
		bin=$old
		[[ $v == new ]] && bin=$new
		run "$v" "$bin" "$tmp/$t.w.$v" link --window 20s --json "$tmp/$t"
	done
	s=identical
	for x in json err; do
		cmp -s "$tmp/$t.w.old.$x" "$tmp/$t.w.new.$x" || { s="DIFFERENT ($x)"; rc=1; }
	done
	echo "$t --window 20s: $s"
done
exit $rc
