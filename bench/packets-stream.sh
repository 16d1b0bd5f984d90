#!/usr/bin/env bash
# bench/packets-stream.sh — does `wap5 reconcile` on a capture keep its memory
# flat as the capture gets longer? Writes two synthetic captures with the
# reconcile tests' generator (TestWriteBenchCaptures: 20 TCP connections x 500
# request/reply pairs, and x 5000 — the same connections ten times as long;
# 200-byte requests, 1400-byte replies, 1 ms apart), reconciles each with every
# wap5 binary given (e.g. a baseline build and this tree's) and prints medians
# of RUNS runs of user+sys CPU and peak RSS (/usr/bin/time), CPU per packet,
# and a hash of the output (equal hashes: identical messages).
#   bench/packets-stream.sh OUTDIR [WAP5_BINARY...]   (default bin/wap5; RUNS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: packets-stream.sh OUTDIR [WAP5...]}; shift
[ $# -gt 0 ] || set -- "$PWD/bin/wap5"
RUNS=${RUNS:-3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -f "$out/synthetic-x10.pcap" ] || WAP5_PCAP_BENCH_DIR=$out go test -count 1 -run TestWriteBenchCaptures ./reconcile >/dev/null
count() { # packets in a little-endian classic pcap
  python3 - "$1" <<'PY'
import struct, sys
n = 0
with open(sys.argv[1], 'rb') as fh:
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
declare -A pkts
for x in 1 10; do
  pkts[$x]=$(count "$out/synthetic-x$x.pcap")
  echo "# ${x}x: synthetic-x$x.pcap, ${pkts[$x]} packets, $(du -h "$out/synthetic-x$x.pcap" | cut -f1)"
done
for bin in "$@"; do
  for x in 1 10; do
    cpu=() rss=()
    for _ in $(seq "$RUNS"); do
      /usr/bin/time -f '%U %S %M' -o "$out/time" "$bin" reconcile "$out/synthetic-x$x.pcap" >"$out/stdout" 2>/dev/null
      read -r u s m <"$out/time"
      cpu+=("$(echo "$u + $s" | bc)"); rss+=("$m")
    done
    c=$(printf '%s\n' "${cpu[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    m=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    printf '%-24s %3sx  cpu %6.2f s (%4.0f ns/packet)  peak RSS %7d KiB  %s messages, sha1 %s\n' "$bin" "$x" "$c" \
      "$(echo "$c * 1000000000 / ${pkts[$x]}" | bc)" "$m" "$(grep -vc '^#' "$out/stdout" || true)" "$(grep -v '^#' "$out/stdout" | sha1sum | cut -c1-12)"
  done
done
