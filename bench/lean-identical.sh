#!/usr/bin/env bash
# Byte-identity check of `wap5 link` (whole traces, both methods) between two
# binaries on the generated scenarios: stdout, stderr and --instances for
# --json, text output, --histograms --top 5, wap5 --iterate and
# --aggregate-clients, on text and binary input. Exit status 1 on any
# difference.
#   bench/lean-identical.sh OLD_WAP5 NEW_WAP5      # a few minutes on 2 cores
# Environment: TMPDIR; DUR (default 60s).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
traces=()
for f in testdata/gen/*.gen; do
	g=$(basename "$f" .gen)
	[[ $g == codeen ]] && continue
	"$new" gen --duration "${DUR:-60s}" -o "$tmp/$g.txt" "$f"
	traces+=("$g.txt")
done
"$new" gen --binary --duration "${DUR:-60s}" -o "$tmp/multitier.bin" testdata/gen/multitier.gen
"$new" gen --binary --duration 30s -o "$tmp/codeen30.bin" testdata/gen/codeen.gen
traces+=(multitier.bin codeen30.bin)
rc=0 n=0
# shellcheck source=bench/identical-check.sh
. bench/identical-check.sh
for t in "${traces[@]}"; do
	for m in joint wap5; do
		check "$t.$m.json" link --method "$m" --json --instances @INST@ "$tmp/$t"
		check "$t.$m.text" link --method "$m" "$tmp/$t"
		check "$t.$m.hist" link --method "$m" --histograms --top 5 "$tmp/$t"
		check "$t.$m.agg" link --method "$m" --aggregate-clients --json --top 30 "$tmp/$t"
	done
	check "$t.wap5.iter" link --method wap5 --iterate --json --instances @INST@ "$tmp/$t"
	check "$t.wap5.gamma" link --method wap5 --delay-model gamma --iterate --iterations 2 "$tmp/$t"
done
echo "$n runs compared; rc $rc"
exit $rc
