#!/usr/bin/env bash
# bench/reconcile-codeen.sh — wap5 reconcile on a CoDeeN-sized set of REAL
# libsockcap log files (WAP5 Table 5: 4.7M messages, 115 hosts).
#
#   bench/reconcile-codeen.sh [RUNS [MESSAGES]]   default 3 runs, the whole 4,702,865-message trace
#
# 1. `wap5 gen testdata/gen/codeen.gen` makes the CoDeeN-like trace
#    (115 traced proxies with clocks seconds apart, 3000 untraced clients,
#    300 untraced origin servers, 5 DNS servers; a new TCP connection per
#    call, as HTTP/1.0 proxies did).
# 2. bench/codeenlogs (Go + the C library's encoder) writes one sealed log
#    per proxy carrying those messages: socket/connect/accept/close events,
#    SC_K_FD records per chunk, hot-path SEND/RECV records.
# 3. Times `wap5 reconcile -o out.w5t LOGDIR` RUNS times (and with
#    --no-nat-detect, and --no-nat-detect --synced-clocks) under
#    /usr/bin/time: CPU (user+sys), peak RSS; medians.
# 4. Checks the reconciled messages against the generated trace (send time,
#    nodes, endpoints, receive time, size of every message), with the
#    defaults (NAT detection on: a proxy's relayed request and response are
#    not a translation) and with --no-nat-detect; and that the default run
#    reports no translation (the set has none).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${1:-3}
msgs=${2:-}
cd "$root"
make -s bin/wap5
work=$(mktemp -d /tmp/reconcile-codeen.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/codeenlogs" ./bench/codeenlogs
bin/wap5 gen ${msgs:+--messages "$msgs"} -o "$work/codeen.txt" testdata/gen/codeen.gen
"$work/codeenlogs" -o "$work/logs" "$work/codeen.txt"
echo "logs: $(find "$work/logs" -type f | wc -l) files, $(du -sb "$work/logs" | cut -f1) bytes (sealed)"
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for opts in "" "--no-nat-detect" "--no-nat-detect --synced-clocks"; do
	: >"$work/times"
	for _ in $(seq "$runs"); do
		# shellcheck disable=SC2086
		/usr/bin/time -f "%U %S %M %e" -a -o "$work/times" bin/wap5 reconcile $opts -o "$work/out.w5t" "$work/logs" 2>/dev/null
	done
	cpu=$(awk '{print $1+$2}' "$work/times" | med)
	rss=$(awk '{print $3}' "$work/times" | med)
	echo "reconcile ${opts:-(defaults)}: median of $runs: cpu $cpu s (user+sys), peak RSS $((rss / 1024)) MB"
done
norm() { grep -v '^#' | awk '{print $1,$2,$3,$4,$5,$6,$7}' | sort; }
norm <"$work/codeen.txt" >"$work/want"
for opts in "" "--no-nat-detect"; do
	# shellcheck disable=SC2086
	bin/wap5 reconcile $opts "$work/logs" 2>"$work/stderr" | norm >"$work/got"
	echo "messages ${opts:-(defaults)}: generated $(wc -l <"$work/want"), reconciled $(wc -l <"$work/got"), differing lines $(comm -3 "$work/want" "$work/got" | wc -l), translations reported $(grep -c '^wap5: warning: nat: ' "$work/stderr" || true)"
done
