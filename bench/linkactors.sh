#!/usr/bin/env bash
# The same-thread hint's cost and gain in the joint linker: multitier (gen,
# no actors) and the same trace with thread-per-request actors added
# (bench/linkactors-threads.py), linked by an old and a new wap5 alternately;
# median CPU seconds and peak RSS of RUNS runs each, whether the outputs are
# identical, and `wap5 score`'s exact-set line.
#   bench/linkactors.sh OLD_WAP5 NEW_WAP5     # about 2 minutes on 2 cores
# Environment: RUNS (default 5), DUR (default 600s), TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
RUNS=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, $(lscpu | grep 'Model name' | sed 's/Model name: *//'), $(date -u +%Y-%m-%dT%H:%MZ)"
"$new" gen --parents --duration "${DUR:-600s}" -o "$tmp/mt.txt" testdata/gen/multitier.gen
python3 bench/linkactors-threads.py "$tmp/mt.txt" "$tmp/mt-actors.txt"
echo "multitier ${DUR:-600s}: $(grep -vc '^#' "$tmp/mt.txt") messages"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for t in mt mt-actors; do
	for tag in old new; do : >"$tmp/$t.$tag.cpu"; : >"$tmp/$t.$tag.mem"; done
	for _ in $(seq "$RUNS"); do
		for tag in old new; do
			bin=$old
			[[ $tag == new ]] && bin=$new
			/usr/bin/time -f "%U %S %M" -o "$tmp/time" "$bin" link --json --instances "$tmp/$t.$tag.inst" "$tmp/$t.txt" >"$tmp/$t.$tag.json" 2>"$tmp/$t.$tag.err"
			read -r u s m <"$tmp/time"
			echo "$u + $s" | bc >>"$tmp/$t.$tag.cpu"
			echo $((m / 1024)) >>"$tmp/$t.$tag.mem"
		done
	done
	same=differ
	cmp -s "$tmp/$t.old.json" "$tmp/$t.new.json" && cmp -s "$tmp/$t.old.inst" "$tmp/$t.new.inst" && same=identical
	echo "$t: old $(median <"$tmp/$t.old.cpu") CPU-s $(median <"$tmp/$t.old.mem") MB, new $(median <"$tmp/$t.new.cpu") CPU-s $(median <"$tmp/$t.new.mem") MB (medians of $RUNS); outputs $same"
	echo "  cpu old: $(tr '\n' ' ' <"$tmp/$t.old.cpu")  new: $(tr '\n' ' ' <"$tmp/$t.new.cpu")"
	for tag in old new; do
		echo "  $tag: $("$new" score --truth "$tmp/$t.txt" --instances "$tmp/$t.$tag.inst" "$tmp/$t.$tag.json" | grep 'instances (sets)')"
	done
done
