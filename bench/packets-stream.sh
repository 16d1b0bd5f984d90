#!/usr/bin/env bash
# bench/packets-stream.sh — does `wap5 reconcile` on captures keep its memory
# flat as the capture gets longer? Makes two real captures with
# scripts/nat-testbed.sh (tcpdump on both router veths, DNAT + masquerade):
# 1x = CONNS connections x REQS request/reply + DGRAMS UDP, and 10x the
# requests and datagrams over the same connections; then reconciles each
# pair of pcaps with every wap5 binary given (e.g. a baseline and this tree)
# and prints medians of RUNS runs of user+sys CPU and peak RSS
# (/usr/bin/time), plus CPU per packet. Needs root and bin/wap5 (make).
#   bench/packets-stream.sh OUTDIR WAP5_BINARY...
#   (CONNS, REQS, DGRAMS, RUNS override the sizes; KEEP=1 reuses OUTDIR's captures)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: packets-stream.sh OUTDIR WAP5...}; shift
[ $# -gt 0 ] || set -- "$PWD/bin/wap5"
RUNS=${RUNS:-3} CONNS=${CONNS:-16} REQS=${REQS:-200} DGRAMS=${DGRAMS:-50}
mkdir -p "$out"
for x in 1 10; do
  d=$out/x$x
  if [ "${KEEP:-0}" != 1 ] || [ ! -f "$d/client-side.pcap" ]; then
    CONNS=$CONNS REQS=$((REQS * x)) DGRAMS=$((DGRAMS * x)) scripts/nat-testbed.sh "$d" >/dev/null 2>&1
  fi
done
count() { # packets in pcap files (little-endian classic pcap, as tcpdump writes)
  python3 - "$@" <<'PY'
import struct, sys
n = 0
for f in sys.argv[1:]:
    with open(f, 'rb') as fh:
        fh.seek(24)
        while True:
            h = fh.read(16)
            if len(h) < 16:
                break
            n += 1
            fh.seek(struct.unpack('<I', h[8:12])[0], 1)
print(n)
PY
}
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for x in 1 10; do
  d=$out/x$x
  echo "# ${x}x: $(wc -l <"$d/expected") messages, $(count "$d/client-side.pcap" "$d/server-side.pcap") packets, $(du -ch "$d/client-side.pcap" "$d/server-side.pcap" | tail -1 | cut -f1)"
done
for bin in "$@"; do
  for x in 1 10; do
    d=$out/x$x
    pk=$(count "$d/client-side.pcap" "$d/server-side.pcap")
    cpu=() rss=()
    for _ in $(seq "$RUNS"); do
      /usr/bin/time -f '%U %S %M' -o "$out/time" "$bin" reconcile --hosts "$d/hosts" "$d/client-side.pcap" "$d/server-side.pcap" >"$out/stdout.$x" 2>/dev/null
      read -r u s m <"$out/time"
      cpu+=("$(echo "$u + $s" | bc)"); rss+=("$m")
    done
    c=$(printf '%s\n' "${cpu[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    m=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    printf '%-40s %3sx  cpu %6.2f s (%5.0f ns/packet)  peak RSS %7d KiB  messages %s  sha %s\n' "$bin" "$x" "$c" \
      "$(echo "$c * 1000000000 / $pk" | bc)" "$m" "$(grep -vc '^#' "$out/stdout.$x" || true)" "$(grep -v '^#' "$out/stdout.$x" | sha1sum | cut -c1-12)"
  done
done
