#!/usr/bin/env bash
# bench/packets.sh — cost of the packet path: wap5 nat and wap5 reconcile on
# pcaps (alone and mixed with libsockcap logs) of a real run through iptables
# DNAT + masquerade (scripts/nat-testbed.sh), plus the Go benchmarks.
# Medians of RUNS runs of user+sys CPU seconds and peak RSS (/usr/bin/time).
# Needs root (network namespaces) and bin/wap5 + bin/libsockcap.so (make).
#   bench/packets.sh [OUTDIR]    (CONNS, REQS, DGRAMS, RUNS override the sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/wap5-packets.XXXXXX)}
RUNS=${RUNS:-5}
export CONNS=${CONNS:-64} REQS=${REQS:-300} DGRAMS=${DGRAMS:-500}
bin=${WAP5_BIN:-$PWD/bin}
[ -x "$bin/wap5" ] || { echo "packets.sh: $bin/wap5 missing (make)" >&2; exit 1; }
WAP5_BIN=$bin scripts/nat-testbed.sh "$out/run" 2>/dev/null
r=$out/run
pk=("$r/client-side.pcap" "$r/server-side.pcap")
msgs=$(wc -l <"$r/expected")
pkts=$(python3 - "${pk[@]}" <<'EOF'
import struct, sys
n = 0
for f in sys.argv[1:]:
    d = open(f, 'rb').read()
    i = 24
    while i + 16 <= len(d):
        n += 1
        i += 16 + struct.unpack('<I', d[i+8:i+12])[0]
print(n)
EOF
)
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "# workload: $msgs messages ($CONNS TCP connections x $REQS request/reply, $DGRAMS UDP exchanges); $pkts packets in 2 captures ($(du -ch "${pk[@]}" | tail -1 | cut -f1))"
measure() { # name, command...
  local name=$1; shift
  local cpu=() rss=()
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f '%U %S %M' -o "$out/time" "$@" >"$out/stdout" 2>/dev/null
    read -r u s m <"$out/time"
    cpu+=("$(echo "$u + $s" | bc)"); rss+=("$m")
  done
  local c m
  c=$(printf '%s\n' "${cpu[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
  m=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
  printf '%-28s cpu %6.2f s  peak RSS %6d KiB  out %s lines\n' "$name" "$c" "$m" "$(grep -vc '^#' "$out/stdout" || true)"
}
measure "nat (2 pcaps)" "$bin/wap5" nat --json "${pk[@]}"
measure "reconcile pcaps" "$bin/wap5" reconcile --hosts "$r/hosts" "${pk[@]}"
measure "reconcile logs" "$bin/wap5" reconcile --hosts "$r/hosts" "$r/logs"
measure "reconcile logs+pcaps" "$bin/wap5" reconcile --hosts "$r/hosts" "$r/logs" "${pk[@]}"
echo "# go test -run XXX -bench 'ReadCapture|PcapReconcile' -benchmem -count 5 ./reconcile; go test -run XXX -bench Detect -benchmem -count 5 ./nat"
go test -run XXX -bench 'ReadCapture|PcapReconcile' -benchmem -count 5 ./reconcile | grep ^Benchmark
go test -run XXX -bench Detect -benchmem -count 5 ./nat | grep ^Benchmark
