#!/usr/bin/env bash
# Byte-identity of `wap5 link --method wap5` between two binaries on binary
# traces, where the new one may decode them straight into envelopes
# (linking.LinkEnvelopes: no --instances, no --aggregate-clients, no
# --window): stdout, stderr and the exit status for --json, text,
# --histograms --top 5, --iterate, --delay-model gamma, --no-skew and
# --aggregate-clients (read as before) on every generated scenario as a
# binary trace, on damaged binary traces, and on the CoDeeN-sized
# inputs (codeen10.bin, codeen.bin) where present. Exit status 1 on any
# difference.
#   bench/envelope-identical.sh OLD_WAP5 NEW_WAP5
# Environment: TMPDIR; INPUTS (default /tmp/inputs); DUR (default 60s); BIG=0
# leaves out codeen.bin.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2
in=${INPUTS:-/tmp/inputs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
traces=()
for f in testdata/gen/*.gen; do
	g=$(basename "$f" .gen)
	[[ $g == codeen ]] && continue
	"$new" gen --binary --duration "${DUR:-60s}" -o "$tmp/$g.bin" "$f"
	traces+=("$tmp/$g.bin")
done
"$new" gen --binary --duration 30s -o "$tmp/codeen30.bin" testdata/gen/codeen.gen
traces+=("$tmp/codeen30.bin")
# Damaged: cut in the middle of the messages, and a flipped byte.
head -c $(($(stat -c %s "$tmp/codeen30.bin") / 2)) "$tmp/codeen30.bin" >"$tmp/cut.bin"
cp "$tmp/codeen30.bin" "$tmp/flip.bin"
printf '\x55' | dd of="$tmp/flip.bin" bs=1 seek=$(($(stat -c %s "$tmp/flip.bin") / 3)) conv=notrunc status=none
traces+=("$tmp/cut.bin" "$tmp/flip.bin")
[[ -f $in/codeen10.bin ]] && traces+=("$in/codeen10.bin")
[[ -f $in/codeen.bin && ${BIG:-1} != 0 ]] && traces+=("$in/codeen.bin")
rc=0 n=0
# shellcheck source=bench/identical-check.sh
. bench/identical-check.sh
for t in "${traces[@]}"; do
	b=$(basename "$t")
	check "$b.json" link --method wap5 --json "$t"
	check "$b.text" link --method wap5 "$t"
	[[ $b == codeen.bin ]] && continue
	check "$b.hist" link --method wap5 --histograms --top 5 "$t"
	check "$b.iter" link --method wap5 --iterate --json "$t"
	check "$b.gamma" link --method wap5 --delay-model gamma --json "$t"
	check "$b.noskew" link --method wap5 --no-skew --json "$t"
	check "$b.clients" link --method wap5 --aggregate-clients --json "$t"
done
echo "$n runs compared, rc $rc"
exit $rc
