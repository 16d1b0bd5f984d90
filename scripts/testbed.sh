#!/usr/bin/env bash
# testbed.sh — a small real multi-host system in network namespaces, traced
# with `wap5 run` on every host (the reconcile integration test and demo).
#
#   scripts/testbed.sh [-o DIR] [--pcap] [--conns N] [--reqs N] [--udp N] [--keep]
#                      [--front] [--clients N] [--work MS] [--fork-race]
#
# Hosts (namespaces, names prefixed with a per-run tag so runs never collide):
#   c   10.200.1.2   client
#   s1  10.200.2.2   forking TCP server :8080, UDP server :5353
#   s2  10.200.3.2   threaded TCP server :9000, which calls a Unix-socket helper
#                    (/tmp/...sock, same host) for every request
#   r   router       10.200.{1,2,3}.1, ip_forward, iptables:
#                    DNAT 10.200.9.9:80/tcp → 10.200.2.2:8080 (virtual IP)
#                    DNAT 10.200.9.9:53/udp → 10.200.2.2:5353
#                    MASQUERADE towards 10.200.3.0/24 (s2 sees the client as 10.200.3.1)
# The client reaches s1 only through the virtual IP and s2 through the masquerade.
#
# --front adds a two-tier service: a forking front server on s1 :8081, behind
# DNAT 10.200.9.9:81 → 10.200.2.2:8081, whose children call s2's threaded
# server (through the masquerade: s2 sees s1 as 10.200.3.1 too) for every
# request; the client then also sends CONNS×REQS requests to it.
# --clients N runs N client processes on c at once (truth/c-K.jsonl; requests
# of different clients overlap at every server).
# --work MS: every server sleeps uniform(0.5, 1.5)·MS ms before each send (its
# service time; the servers record their own timings in truth/).
# --fork-race: the forking server's parent closes its copy of each accepted
# connection between its child's first two reads (a reproducer).
#
# Output in DIR (default ./testbed-out):
#   logs/<node>/...   libsockcap logs (wap5 run --node <node>)
#   truth/*.jsonl     every message each program sent: {"src","dst","bytes","proto","t_ns"},
#                     and the servers' own timings ({"timing":true,...})
#   pcap/<node>.pcap  with --pcap: tcpdump on each host's interface
#   hosts             /etc/hosts-style names of the host addresses (for --hosts)
#   topology          the addresses and translations above, for readers
# Everything is torn down on exit (trap), also on failure or Ctrl-C.
# Needs root, ip (iproute2), iptables, python3; tcpdump for --pcap.
# Only namespaces and veth pairs this script creates are touched.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${WAP5_BIN:-$root/bin}
out=./testbed-out
pcap=0
conns=3
reqs=5
udp=10
keep=0
front=0
clients=1
work_ms=0
fork_race=0
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out=$2; shift 2 ;;
	--pcap) pcap=1; shift ;;
	--conns) conns=$2; shift 2 ;;
	--reqs) reqs=$2; shift 2 ;;
	--udp) udp=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--front) front=1; shift ;;
	--clients) clients=$2; shift 2 ;;
	--work) work_ms=$2; shift 2 ;;
	--fork-race) fork_race=1; shift ;;
	-h|--help) sed -n '2,40p' "$0"; exit 0 ;;
	*) echo "testbed: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ "$(id -u)" != 0 ]; then echo "testbed: needs root (network namespaces)" >&2; exit 1; fi
for p in ip iptables; do command -v $p >/dev/null || { echo "testbed: $p missing" >&2; exit 1; }; done
[ -x "$bin/wap5" ] && [ -f "$bin/libsockcap.so" ] || { echo "testbed: $bin/wap5 or libsockcap.so missing (make)" >&2; exit 1; }
py=/usr/bin/python3
[ -x $py ] || py=$(command -v python3)

tag=w5$$                       # namespace and interface prefix, unique per run
ns_c=$tag-c ns_s1=$tag-s1 ns_s2=$tag-s2 ns_r=$tag-r
mkdir -p "$out"/logs "$out"/truth "$out"/pcap
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/testbed.XXXXXX)
pids=()

cleanup() {
	set +e
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ $keep = 0 ]; then
		for n in $ns_c $ns_s1 $ns_s2 $ns_r; do
			ip netns pids $n 2>/dev/null | xargs -r kill -KILL 2>/dev/null
			ip netns del $n 2>/dev/null
		done
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- namespaces and links ------------------------------------------------
for n in $ns_c $ns_s1 $ns_s2 $ns_r; do
	ip netns add $n
	ip -n $n link set lo up
done
link() { # link HOSTNS SUBNET IFX: veth between host ns (.2) and router (.1)
	local h=$1 net=$2 i=$3
	ip link add ${tag}h$i type veth peer name ${tag}r$i
	ip link set ${tag}h$i netns $h
	ip link set ${tag}r$i netns $ns_r
	ip -n $h link set ${tag}h$i name eth0
	ip -n $h addr add $net.2/24 dev eth0
	ip -n $h link set eth0 up
	ip -n $h route add default via $net.1
	ip -n $ns_r addr add $net.1/24 dev ${tag}r$i
	ip -n $ns_r link set ${tag}r$i up
	# Segmentation offloads would merge segments in captures; keep packets real.
	ip netns exec $h sh -c 'command -v ethtool >/dev/null && ethtool -K eth0 tso off gso off gro off' >/dev/null 2>&1 || true
}
link $ns_c 10.200.1 1
link $ns_s1 10.200.2 2
link $ns_s2 10.200.3 3
ip netns exec $ns_r sysctl -qw net.ipv4.ip_forward=1
ipt() { ip netns exec $ns_r iptables "$@"; }
ipt -t nat -A PREROUTING -d 10.200.9.9 -p tcp --dport 80 -j DNAT --to-destination 10.200.2.2:8080
ipt -t nat -A PREROUTING -d 10.200.9.9 -p tcp --dport 81 -j DNAT --to-destination 10.200.2.2:8081
ipt -t nat -A PREROUTING -d 10.200.9.9 -p udp --dport 53 -j DNAT --to-destination 10.200.2.2:5353
ipt -t nat -A POSTROUTING -o ${tag}r3 -j MASQUERADE

cat >"$out/hosts" <<EOF
10.200.1.2 c
10.200.2.2 s1
10.200.3.2 s2
10.200.9.9 s1
10.200.3.1 r
EOF
cat >"$out/topology" <<EOF
c 10.200.1.2 client
s1 10.200.2.2 fork-server tcp:8080 udp-server udp:5353
s2 10.200.3.2 thread-server tcp:9000 unix-helper
dnat tcp 10.200.9.9:80 -> 10.200.2.2:8080
dnat udp 10.200.9.9:53 -> 10.200.2.2:5353
snat tcp 10.200.1.2:* -> 10.200.3.1:* (masquerade towards s2)
EOF
if [ $front = 1 ]; then
	cat >>"$out/topology" <<EOF
s1 10.200.2.2 front-server tcp:8081 (calls s2 tcp:9000)
dnat tcp 10.200.9.9:81 -> 10.200.2.2:8081
snat tcp 10.200.2.2:* -> 10.200.3.1:* (masquerade towards s2)
EOF
fi

# The captures and the workload run at real-time priority where they may
# (root). The servers log their own timings next to each system call (the
# truth wap5's delays are checked against): on a loaded machine a preemption
# between the call and the server's clock read puts scheduler noise into that
# comparison, and tcpdump drops packets it does not read in time.
rt=()
chrt -r 1 true 2>/dev/null && rt=(chrt -r 1)

# --- captures ---------------------------------------------------------------
if [ $pcap = 1 ]; then
	command -v tcpdump >/dev/null || { echo "testbed: tcpdump missing" >&2; exit 1; }
	for h in c s1 s2; do
		ns=$tag-$h
		"${rt[@]}" ip netns exec $ns tcpdump -i eth0 -B 32768 --immediate-mode -s 0 -U -w "$out/pcap/$h.pcap" -Z root 'ip' 2>"$work/tcpdump-$h.err" &
		pids+=($!)
	done
	for h in c s1 s2; do # tcpdump says "listening on" once it captures
		for _ in $(seq 50); do grep -q listening "$work/tcpdump-$h.err" 2>/dev/null && break; sleep 0.1; done
	done
fi

# --- servers ------------------------------------------------------------------
run() { # run NS NODE ARGS...: the workload under wap5 run in a namespace
	local ns=$1 node=$2
	shift 2
	exec "${rt[@]}" ip netns exec $ns env TESTBED_PEERS="$peers" TESTBED_WORK_MS="$work_ms" TESTBED_FORK_RACE="$fork_race" TESTBED_SEED="${seed:-5}" "$bin/wap5" run --out "$out/logs" --node $node -- $py "$here/testbed_workload.py" "$@"
}
usock=$work/helper.sock
peers="10.200.1.2=c"
run $ns_s1 s1 fork-server s1 8080 "$out/truth/s1-fork.jsonl" 2>"$work/s1-fork.err" & pids+=($!)
run $ns_s1 s1 udp-server s1 5353 "$out/truth/s1-udp.jsonl" 2>"$work/s1-udp.err" & pids+=($!)
peers="10.200.3.1=c"
run $ns_s2 s2 unix-helper s2 "$usock" "$out/truth/s2-helper.jsonl" 2>"$work/s2-helper.err" & pids+=($!)
wait_port() { # wait_port NS PORT [udp]
	for _ in $(seq 400); do # 20 s: python starts slowly on a busy machine
		if ip netns exec $1 ss -H -ln${3:-t} "sport = :$2" | grep -q .; then return 0; fi
		sleep 0.05
	done
	echo "testbed: nothing listens on $2 in $1" >&2
	cat "$work"/*.err >&2
	return 1
}
for _ in $(seq 400); do [ -S "$usock" ] && break; sleep 0.05; done
run $ns_s2 s2 thread-server s2 9000 "$usock" "$out/truth/s2-thread.jsonl" 2>"$work/s2-thread.err" & pids+=($!)
if [ $front = 1 ]; then
	peers="10.200.1.2=c"
	run $ns_s1 s1 front-server s1 8081 10.200.3.2 9000 s2 "$out/truth/s1-front.jsonl" 2>"$work/s1-front.err" & pids+=($!)
	wait_port $ns_s1 8081
fi
wait_port $ns_s1 8080
wait_port $ns_s1 5353 u
wait_port $ns_s2 9000

# --- client -------------------------------------------------------------------
peers=""
specs=(tcp:s1:10.200.9.9:80:$conns:$reqs tcp:s2:10.200.3.2:9000:$conns:$reqs)
[ $front = 1 ] && specs+=(tcp:s1:10.200.9.9:81:$conns:$reqs)
specs+=(udp:s1:10.200.9.9:53:$udp)
if [ "$clients" = 1 ]; then
	(run $ns_c c client c "$out/truth/c.jsonl" "${specs[@]}" 2>"$work/c.err") || { cat "$work"/*.err >&2; exit 1; }
else
	cpids=()
	for k in $(seq "$clients"); do
		seed=$((4 + k)) # client 1 sends what the single client sends
		(run $ns_c c client c "$out/truth/c-$k.jsonl" "${specs[@]}" 2>"$work/c-$k.err") & cpids+=($!)
	done
	seed=
	for p in "${cpids[@]}"; do wait "$p" || { cat "$work"/*.err >&2; exit 1; }; done
fi
sleep 0.3 # let the servers finish their last writes

# Stop servers (wap5 run forwards SIGTERM and seals the logs), then captures.
n=${#pids[@]}
for ((i = n - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
echo "testbed: logs in $out/logs, truth in $out/truth$([ $pcap = 1 ] && echo ", captures in $out/pcap")" >&2
