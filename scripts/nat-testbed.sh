#!/usr/bin/env bash
# nat-testbed.sh OUTDIR — a client reaching a server through a router that does
# iptables DNAT (virtual address 10.201.1.100, TCP :80 → 10.201.2.2:8080 and
# UDP :53 → 10.201.2.2:5353) and masquerade (SNAT to 10.201.2.1), in three
# network namespaces of our own, captured with tcpdump on both router veths.
#
#   client ns (10.201.1.2) ── router ns (10.201.1.1 | 10.201.2.1) ── server ns (10.201.2.2)
#
# Writes OUTDIR/client-side.pcap and OUTDIR/server-side.pcap (and
# OUTDIR/router-any.pcap, tcpdump -i any on the router), OUTDIR/expected
# (one line per message the workload sent: "tcp|udp request|reply BYTES"),
# OUTDIR/hosts, and with WAP5_BIN (bin/ with wap5 and libsockcap.so) the
# libsockcap logs of both programs under OUTDIR/logs. Everything is torn down on
# exit. Needs root, ip, iptables, tcpdump and python3. Never touches any
# interface or address outside its own namespaces.
#
# Workload size: CONNS TCP connections × REQS request/reply pairs, DGRAMS UDP
# queries (defaults 8, 10, 12).
set -euo pipefail
out=${1:?usage: nat-testbed.sh OUTDIR}
CONNS=${CONNS:-8} REQS=${REQS:-10} DGRAMS=${DGRAMS:-12}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ "$(id -u)" = 0 ] || { echo "nat-testbed: needs root" >&2; exit 77; }
for c in ip iptables tcpdump python3; do
  command -v $c >/dev/null || { echo "nat-testbed: $c missing" >&2; exit 77; }
done

id=$$
C=w5nc$id R=w5nr$id S=w5ns$id
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in $C $R $S; do ip netns del $n 2>/dev/null || true; done
}
trap cleanup EXIT

for n in $C $R $S; do ip netns add $n; ip -n $n link set lo up; done
# veth pairs are created inside the router namespace, then one end moved.
ip -n $R link add vc type veth peer name eth0 netns $C
ip -n $R link add vs type veth peer name eth0 netns $S
ip -n $C addr add 10.201.1.2/24 dev eth0
ip -n $R addr add 10.201.1.1/24 dev vc
ip -n $R addr add 10.201.2.1/24 dev vs
ip -n $S addr add 10.201.2.2/24 dev eth0
for l in "$C eth0" "$R vc" "$R vs" "$S eth0"; do set -- $l; ip -n $1 link set $2 up; done
ip -n $C route add default via 10.201.1.1
ip -n $S route add default via 10.201.2.1
ip netns exec $R sysctl -qw net.ipv4.ip_forward=1
# Offloads would hand tcpdump segments bigger than the MTU; keep packets real.
for l in "$C eth0" "$R vc" "$R vs" "$S eth0"; do set -- $l
  ip netns exec $1 sh -c "command -v ethtool >/dev/null && ethtool -K $2 tso off gso off gro off >/dev/null 2>&1 || true"
done
ipt() { ip netns exec $R iptables "$@"; }
ipt -t nat -A PREROUTING -d 10.201.1.100 -p tcp --dport 80 -j DNAT --to-destination 10.201.2.2:8080
ipt -t nat -A PREROUTING -d 10.201.1.100 -p udp --dport 53 -j DNAT --to-destination 10.201.2.2:5353
ipt -t nat -A POSTROUTING -o vs -j MASQUERADE
# The virtual address must answer ARP on the client side.
ip -n $R addr add 10.201.1.100/32 dev vc

cat > "$out/hosts" <<EOF
10.201.1.2 client
10.201.2.2 server
EOF

cat > "$out/server.py" <<'EOF'
import socket, socketserver, sys, threading
class H(socketserver.BaseRequestHandler):
    def handle(self):
        f = self.request.makefile('rb')
        while True:
            head = f.read(16)
            if len(head) < 16:
                return
            req, rep = head.split()
            f.read(int(req) - 16)
            self.request.sendall(b'r' * int(rep))
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
tcp = S(('0.0.0.0', 8080), H)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(('0.0.0.0', 5353))
def serve_udp():
    while True:
        data, peer = udp.recvfrom(65536)
        udp.sendto(b'answer:' + data, peer)
threading.Thread(target=serve_udp, daemon=True).start()
print('ready', flush=True)
tcp.serve_forever()
EOF

cat > "$out/client.py" <<'EOF'
import os, socket, sys, time
conns, reqs, dgrams = map(int, sys.argv[1:4])
exp = open(sys.argv[4], 'w')
for c in range(conns):
    s = socket.create_connection(('10.201.1.100', 80))
    for r in range(reqs):
        req, rep = 100 + 7 * r + c, 1000 + 37 * r + c
        s.sendall(b'%07d %07d\n' % (req, rep) + b'q' * (req - 16))
        got = 0
        while got < rep:
            b = s.recv(65536)
            if not b:
                sys.exit('server closed the connection')
            got += len(b)
        exp.write('tcp request %d\ntcp reply %d\n' % (req, rep))
        time.sleep(0.002)
    s.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(2)
for i in range(dgrams):
    q = b'query %03d ' % i + b'x' * (40 + i)
    u.sendto(q, ('10.201.1.100', 53))
    a, _ = u.recvfrom(65536)
    exp.write('udp request %d\nudp reply %d\n' % (len(q), len(a)))
    time.sleep(0.002)
exp.close()
EOF

# Captures on both router veths, and one of the whole router (-i any: Linux
# cooked headers, every forwarded packet twice, before and after NAT).
# They run at real-time priority with a 32 MiB buffer where they may (root):
# on a loaded machine the kernel otherwise drops packets tcpdump did not read
# in time ("dropped by kernel" in tcpdump-*.log).
rt=()
chrt -r 1 true 2>/dev/null && rt=(chrt -r 1)
for side in "vc client-side" "vs server-side" "any router-any"; do set -- $side
  "${rt[@]}" ip netns exec $R tcpdump -i $1 -B 32768 --immediate-mode -U -s 0 -w "$out/$2.pcap" 2>"$out/tcpdump-$2.log" &
  pids+=($!)
done
for f in client-side server-side router-any; do
  for _ in $(seq 100); do grep -q "listening on" "$out/tcpdump-$f.log" 2>/dev/null && break; sleep 0.05; done
done

run=()
if [ -n "${WAP5_BIN:-}" ] && [ -x "$WAP5_BIN/wap5" ] && [ -f "$WAP5_BIN/libsockcap.so" ]; then
  mkdir -p "$out/logs"
  run=("$WAP5_BIN/wap5" run --lib "$WAP5_BIN/libsockcap.so" --out "$out/logs" --node)
fi
srvrun=() clirun=()
[ ${#run[@]} -gt 0 ] && srvrun=("${run[@]}" server --) && clirun=("${run[@]}" client --)
ip netns exec $S "${srvrun[@]}" python3 "$out/server.py" >"$out/server.log" 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 200); do grep -q ready "$out/server.log" 2>/dev/null && break; sleep 0.05; done
timeout 60 ip netns exec $C "${clirun[@]}" python3 "$out/client.py" "$CONNS" "$REQS" "$DGRAMS" "$out/expected" 2>"$out/client.log"
sleep 0.3
kill -TERM $srv 2>/dev/null || true
wait $srv 2>/dev/null || true
# Let the captures drain before the trap stops them: on a loaded machine
# tcpdump can lag the workload by seconds, so wait until every file has
# stopped growing for a second (at most 20 s), then stop tcpdump gracefully.
stable=0 last=
for _ in $(seq 200); do
  now=$(stat -c %s "$out"/client-side.pcap "$out"/server-side.pcap "$out"/router-any.pcap 2>/dev/null | tr '\n' ' ')
  if [ "$now" = "$last" ]; then stable=$((stable+1)); else stable=0; fi
  last=$now
  [ $stable -ge 10 ] && break
  sleep 0.1
done
echo "nat-testbed: done in $out" >&2
