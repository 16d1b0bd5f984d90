#!/usr/bin/env bash
# Interleaved CPU and peak-RSS comparison of two wap5 binaries on one
# `wap5 link` command: ROUNDS pairs (default 3), the order swapped every
# round; one line per run: tag, user s, sys s, user+sys, peak RSS MB
# (%M/1000), load average, stdout md5, stderr md5. The output goes to a file
# in TMPDIR (deleted).
#   bench/link-pairs.sh BASE NEW link --method wap5 --json /tmp/inputs/codeen.bin
set -euo pipefail
base=$1 new=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() { # one TAG BIN ARGS...
	local tag=$1 bin=$2
	shift 2
	/usr/bin/time -f '%U %S %M' -o "$tmp/time" "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || true
	read -r u s m <"$tmp/time"
	printf '%s %s %s %.2f %.1f %s %s %s\n' "$tag" "$u" "$s" "$(echo "$u + $s" | bc)" "$(echo "$m / 1000" | bc -l)" \
		"$(cut -d' ' -f1 /proc/loadavg)" "$(md5sum <"$tmp/out" | cut -c1-8)" "$(md5sum <"$tmp/err" | cut -c1-8)"
}
for r in $(seq "${ROUNDS:-3}"); do
	if ((r % 2)); then
		one base "$base" "$@"
		one new "$new" "$@"
	else
		one new "$new" "$@"
		one base "$base" "$@"
	fi
done
