#!/bin/bash
# bench/mem16-identical.sh OLD NEW: wap5 link's stdout, stderr and
# --instances file, OLD against NEW, on the big inputs: both methods,
# --json and the text table, with and without --instances, binary and
# text traces. Prints one line per case and the count of differences.
set -u
OLD=$1 NEW=$2
IN=${IN:-/tmp/inputs}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
bad=0 n=0
run() { # name, args...
	local name=$1; shift
	local a=() b=()
	for x in "$@"; do a+=("${x//INST/$W/old.inst}"); b+=("${x//INST/$W/new.inst}"); done
	rm -f "$W"/old.inst "$W"/new.inst
	"$OLD" "${a[@]}" >"$W/old.out" 2>"$W/old.err"; local ro=$?
	"$NEW" "${b[@]}" >"$W/new.out" 2>"$W/new.err"; local rn=$?
	local ok=same
	cmp -s "$W/old.out" "$W/new.out" || ok=DIFF-stdout
	cmp -s "$W/old.err" "$W/new.err" || ok=DIFF-stderr
	[ "$ro" = "$rn" ] || ok=DIFF-exit
	if [ -e "$W/old.inst" ] || [ -e "$W/new.inst" ]; then
		cmp -s "$W/old.inst" "$W/new.inst" || ok=DIFF-instances
	fi
	n=$((n+1)); [ $ok = same ] || bad=$((bad+1))
	echo "$ok $name $(md5sum <"$W/new.out" | cut -c1-8) $(md5sum <"$W/new.err" | cut -c1-8)"
}
for f in codeen.bin codeen.txt codeen10.txt codeen10.bin mt.txt; do
	for m in wap5 joint; do
		run "$f $m --json" link --method $m --json "$IN/$f"
		run "$f $m text" link --method $m "$IN/$f"
		run "$f $m --json --instances" link --method $m --json --instances INST "$IN/$f"
		case $f in codeen10*|mt.txt)
			run "$f $m text --histograms --top 50" link --method $m --histograms --top 50 "$IN/$f"
			run "$f $m --json --aggregate-clients" link --method $m --json --aggregate-clients "$IN/$f" ;;
		esac
	done
done
echo "$((n-bad)) of $n identical"
