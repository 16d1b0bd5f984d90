#!/usr/bin/env bash
# Byte-identity check for the streaming linker (`wap5 link --window`): runs
# two wap5 binaries over a matrix of inputs × method (joint, wap5) ×
# --window-memory (16: the default, 0: spill patterns and classes at every
# chunk) × output options, and compares stdout, stderr, the exit status and
# the --instances file. Exit status 1 on any difference.
#   bench/linking-window-identical.sh OLD_WAP5 NEW_WAP5
# Inputs: cdn.txt, cdn.bin (gen --duration 60s cdn.gen), mt.bin (gen
# --binary --duration 600s multitier.gen), and from $INPUTS (default
# /tmp/inputs) mt.txt, codeen10.txt and codeen10.bin where present (the
# CoDeeN-sized trace's first 360 s). About 15 minutes on 2 busy cores.
# Environment: TMPDIR; INPUTS; WINDOW (default 60s); MEMS (default "16 0").
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
inputs=${INPUTS:-/tmp/inputs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$new" gen --duration 60s -o "$tmp/cdn.txt" testdata/gen/cdn.gen
"$new" gen --binary --duration 60s -o "$tmp/cdn.bin" testdata/gen/cdn.gen
"$new" gen --binary --duration 600s -o "$tmp/mt.bin" testdata/gen/multitier.gen
traces=("$tmp/cdn.txt" "$tmp/cdn.bin" "$tmp/mt.bin")
for f in mt.txt codeen10.txt codeen10.bin; do
	[[ -f $inputs/$f ]] && traces+=("$inputs/$f")
done
opts=("--json" "--json --top 5" "" "--top 7" "--histograms" "--json --instances" "--instances --top 3")
same=0 diff=0
run() { # run BIN OUTPREFIX ARGS...
	local bin=$1 out=$2
	shift 2
	set +e
	"$bin" "$@" >"$out.out" 2>"$out.err"
	echo $? >"$out.rc"
	set -e
}
for t in "${traces[@]}"; do
	for m in joint wap5; do
		for mem in ${MEMS:-16 0}; do
			for o in "${opts[@]}"; do
				for v in old new; do
					bin=$old
					[[ $v == new ]] && bin=$new
					args=(link --window "${WINDOW:-60s}" --window-memory "$mem" --method "$m")
					# shellcheck disable=SC2206
					words=($o)
					for w in "${words[@]}"; do
						if [[ $w == --instances ]]; then
							args+=(--instances "$tmp/$v.inst")
						else
							args+=("$w")
						fi
					done
					rm -f "$tmp/$v.inst"
					run "$bin" "$tmp/$v" "${args[@]}" "$t"
				done
				s=identical
				for x in out err rc; do
					cmp -s "$tmp/old.$x" "$tmp/new.$x" || s="DIFFERENT ($x)"
				done
				if [[ -f $tmp/old.inst || -f $tmp/new.inst ]]; then
					cmp -s "$tmp/old.inst" "$tmp/new.inst" || s="DIFFERENT (instances)"
				fi
				if [[ $s == identical ]]; then
					same=$((same + 1))
				else
					diff=$((diff + 1))
				fi
				echo "$(basename "$t") $m --window-memory $mem ${o:-(text)}: $s (rc $(cat "$tmp/new.rc"), $(wc -c <"$tmp/new.out") bytes)"
			done
		done
	done
done
echo "$same identical, $diff different"
[[ $diff == 0 ]]
