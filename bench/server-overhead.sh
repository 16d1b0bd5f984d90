#!/usr/bin/env bash
# Throughput and CPU cost of capture on saturated servers: wrk against nginx
# (one worker, small static file) and redis-benchmark against redis-server
# (GET and SET), each with and without `wap5 run`.
#
#   bench/server-overhead.sh                    ROUNDS=20 SECS=2 REQS=100000
#   QUICK=1 bench/server-overhead.sh            ROUNDS=6  SECS=1 REQS=50000 (a smoke run, ~1 min)
#   ROUNDS=40 SECS=2 bench/server-overhead.sh   (tighter intervals, ~8 min)
#   OUT=bench/results-server-run.md ...         also write the report there
#   LOGDIR=/dev/shm ...                         put the capture logs there (default: the
#                                               script's temporary directory under /tmp)
#
# Design (the estimate's uncertainty must be smaller than the effect):
# - Both servers run side by side for the whole benchmark, each pinned to CPU 0,
#   the load generator to CPU 1 (taskset; CPU0/CPU1 override), loopback only.
# - Many short rounds; within each round the variants run A B B A (plain, cap,
#   cap, plain — the order flips every round), so a drift of the machine's
#   speed within a round cancels. A round's ratio is captured / plain of the
#   sums of its two runs each.
# - Throughput: the median of the per-round ratios, with a bootstrap 95 %
#   interval (10 000 resamples of the rounds, percentile method, fixed seed).
# - CPU per request: the server's on-CPU time (all threads of the nginx worker /
#   redis-server; /proc/PID/task/*/schedstat: the scheduler's exact runtime,
#   i.e. rusage's user + system time without its tick sampling) divided by the
#   requests served; per round captured / plain, median and bootstrap interval.
#   At saturation the server's CPU per request sets its throughput, so
#   1 − plain/captured is the loss capture causes, and it is far less
#   sensitive to other load on the machine than requests per second.
# Needs bin/ (make), nginx, wrk, redis-server, redis-benchmark, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -n "${QUICK:-}" ]; then
  ROUNDS=${ROUNDS:-6}; SECS=${SECS:-1}; REQS=${REQS:-50000}
else
  ROUNDS=${ROUNDS:-20}; SECS=${SECS:-2}; REQS=${REQS:-100000}
fi
CPU0=${CPU0:-0}
CPU1=${CPU1:-1}
OUT=${OUT:-}
WAP5=$ROOT/bin/wap5
for p in nginx wrk redis-server redis-benchmark taskset python3; do
  command -v "$p" >/dev/null || { echo "server-overhead: $p not installed" >&2; exit 1; }
done
[ -x "$WAP5" ] && [ -f "$ROOT/bin/libsockcap.so" ] || { echo "server-overhead: run make first" >&2; exit 1; }

W=$(mktemp -d /tmp/wap5-bench.XXXXXX)
chmod 755 "$W" # nginx workers may run as nobody
LOGS=$W
[ -n "${LOGDIR:-}" ] && LOGS=$(mktemp -d "$LOGDIR/wap5-bench-logs.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W" "$LOGS"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    sleep 0.05
  done
  echo "server-overhead: nothing listens on $1" >&2; exit 1
}

# --- nginx: one instance without capture, one with, both pinned to CPU0.
mkdir -p "$W/www"
head -c 612 /dev/zero | tr '\0' 'n' > "$W/www/small.html"
nginx_conf() { # DIR PORT
  mkdir -p "$1"
  cat > "$1/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
user root;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $1/body; proxy_temp_path $1/proxy; fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi; scgi_temp_path $1/scgi;
  server { listen 127.0.0.1:$2; root $W/www; }
}
EOF
}
NP=$(free_port); NC=$(free_port)
nginx_conf "$W/nginx-plain" "$NP"
nginx_conf "$W/nginx-cap" "$NC"
taskset -c "$CPU0" nginx -p "$W/nginx-plain" -c "$W/nginx-plain/nginx.conf" -e "$W/nginx-plain/error.log" &
NGX_PLAIN=$!
PIDS+=($!)
taskset -c "$CPU0" "$WAP5" run --out "$LOGS/logs-nginx" --node nginx -- \
  nginx -p "$W/nginx-cap" -c "$W/nginx-cap/nginx.conf" -e "$W/nginx-cap/error.log" 2>"$W/nginx-cap.err" &
NGX_CAP=$!
PIDS+=("$NGX_CAP")
wait_listen "$NP"; wait_listen "$NC"

RP=$(free_port); RC=$(free_port)
redis_args=(--bind 127.0.0.1 --save "" --appendonly no --loglevel warning)
taskset -c "$CPU0" redis-server --port "$RP" "${redis_args[@]}" >/dev/null &
REDIS_PLAIN=$!
PIDS+=($!)
taskset -c "$CPU0" "$WAP5" run --out "$LOGS/logs-redis" --node redis -- redis-server --port "$RC" "${redis_args[@]}" \
  >/dev/null 2>"$W/redis-cap.err" &
REDIS_CAP=$!
PIDS+=("$REDIS_CAP")
wait_listen "$RP"; wait_listen "$RC"

# cpu_ns PID: on-CPU time of all threads of PID so far (schedstat, ns).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
nginx_worker() { pgrep -P "$1" | head -1; }
NGX_PLAIN_W=$(nginx_worker "$NGX_PLAIN"); NGX_CAP_W=$(nginx_worker "$(pgrep -P "$NGX_CAP")")
REDIS_PLAIN_P=$REDIS_PLAIN; REDIS_CAP_P=$(pgrep -P "$REDIS_CAP")
[ -n "$NGX_PLAIN_W" ] && [ -n "$NGX_CAP_W" ] && [ -n "$REDIS_CAP_P" ] || { echo "server-overhead: a server did not start" >&2; exit 1; }

# One measurement: prints "requests/s requests cpu_ns".
wrk_run() { # PORT PID
  local out c0 c1
  c0=$(cpu_ns "$2")
  out=$(taskset -c "$CPU1" wrk -t1 -c32 -d"${SECS}s" "http://127.0.0.1:$1/small.html")
  c1=$(cpu_ns "$2")
  if grep -q 'Non-2xx' <<<"$out"; then echo "server-overhead: nginx answered errors:" >&2; echo "$out" >&2; exit 1; fi
  awk -v c=$((c1 - c0)) '/requests in/ {n = $1} /^Requests\/sec:/ {r = $2} END {print r, n, c}' <<<"$out"
}
redis_run() { # PORT PID TEST
  local out c0 c1
  c0=$(cpu_ns "$2")
  out=$(taskset -c "$CPU1" redis-benchmark -p "$1" -q -t "$3" -n "$REQS" -c 32 | tr '\r' '\n')
  c1=$(cpu_ns "$2")
  awk -v t="$(tr a-z A-Z <<<"$3")" -v n="$REQS" -v c=$((c1 - c0)) '$1 == t":" {r = $2} END {print r, n, c}' <<<"$out"
}
measure() { # WORKLOAD VARIANT -> "requests/s requests cpu_ns"
  case $1-$2 in
  nginx-plain) wrk_run "$NP" "$NGX_PLAIN_W" ;;
  nginx-cap) wrk_run "$NC" "$NGX_CAP_W" ;;
  get-plain) redis_run "$RP" "$REDIS_PLAIN_P" get ;;
  get-cap) redis_run "$RC" "$REDIS_CAP_P" get ;;
  set-plain) redis_run "$RP" "$REDIS_PLAIN_P" set ;;
  set-cap) redis_run "$RC" "$REDIS_CAP_P" set ;;
  esac
}

SAMPLES=$W/samples.txt # round workload variant rps requests cpu_ns
echo "warm-up" >&2
for wl in nginx get set; do for v in plain cap; do measure $wl $v >/dev/null; done; done
NGX_CAP_REQS=0
for i in $(seq "$ROUNDS"); do
  if (( i % 2 )); then order="plain cap cap plain"; else order="cap plain plain cap"; fi
  for wl in nginx get set; do
    for v in $order; do
      read -r rps n c < <(measure $wl $v)
      echo "$i $wl $v $rps $n $c" >> "$SAMPLES"
      [ "$wl-$v" = nginx-cap ] && NGX_CAP_REQS=$((NGX_CAP_REQS + n))
    done
  done
  echo "round $i/$ROUNDS: $(awk -v i="$i" '$1 == i {printf "%s-%s %.0f  ", $2, $3, $4}' "$SAMPLES")" >&2
done
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)

kill -QUIT "$NGX_CAP"; kill -TERM "$REDIS_CAP"
wait "$NGX_CAP" 2>/dev/null || true; wait "$REDIS_CAP" 2>/dev/null || true
ngx_sum=$(grep '^wap5: [0-9]* processes' "$W/nginx-cap.err" || true)
# Every response is one send (writev) in the worker's log: compare with wrk's count.
ngx_sends=$("$WAP5" dump --summary "$LOGS/logs-nginx" | awk '{for (i = 1; i < NF; i++) if ($(i+1) == "send") s += $i} END {print s + 0}')
redis_sum=$(grep '^wap5: [0-9]* processes' "$W/redis-cap.err" || true)

report() {
  echo "# Server throughput and CPU with and without capture"
  echo
  echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'). Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r)."
  echo "Load average at the end: $LOAD. Capture logs in $(df --output=fstype "$LOGS" | tail -1) ($LOGS)."
  echo
  echo "Command: \`ROUNDS=$ROUNDS SECS=$SECS REQS=$REQS bench/server-overhead.sh\` — servers on CPU $CPU0, load generator on"
  echo "CPU $CPU1 (taskset), loopback; $ROUNDS rounds, each A B B A (order flipped every round)."
  echo "- nginx $(nginx -v 2>&1 | sed 's/.*\///'): 1 worker, 612-byte static file, \`wrk -t1 -c32 -d${SECS}s\`."
  echo "- redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'): \`redis-benchmark -q -t get|set -n $REQS -c 32\`."
  echo
  python3 - "$SAMPLES" <<'PY'
import random, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
data = {}  # (workload, round) -> variant -> [rps sum, requests, cpu]
for r, wl, v, rps, n, c in rows:
    d = data.setdefault((wl, int(r)), {}).setdefault(v, [0.0, 0, 0])
    d[0] += float(rps); d[1] += int(n); d[2] += int(c)
names = {"nginx": "nginx (wrk)", "get": "redis GET", "set": "redis SET"}

def boot(xs, reps=10000, seed=1):
    rng = random.Random(seed)
    k = len(xs)
    meds = sorted(statistics.median(rng.choice(xs) for _ in range(k)) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]

print("| workload | plain req/s (median run) | captured req/s | median of per-round ratios captured/plain [95 % CI] | throughput loss [95 % CI] | rounds |")
print("|---|---|---|---|---|---|")
cpu_rows = []
for wl in ("nginx", "get", "set"):
    rounds = sorted(r for (w, r) in data if w == wl)
    ratios, cratios, pc, cc = [], [], [], []
    for r in rounds:
        d = data[(wl, r)]
        if "plain" not in d or "cap" not in d or d["plain"][0] <= 0:
            continue
        ratios.append(d["cap"][0] / d["plain"][0])
        p_cpr = d["plain"][2] / d["plain"][1]
        c_cpr = d["cap"][2] / d["cap"][1]
        pc.append(p_cpr); cc.append(c_cpr)
        cratios.append(c_cpr / p_cpr)
    prps = [float(x[3]) for x in rows if x[1] == wl and x[2] == "plain"]
    crps = [float(x[3]) for x in rows if x[1] == wl and x[2] == "cap"]
    if not ratios:
        continue
    m = statistics.median(ratios); lo, hi = boot(ratios)
    print(f"| {names[wl]} | {statistics.median(prps):.0f} | {statistics.median(crps):.0f} | {m:.4f} [{lo:.4f}, {hi:.4f}] | "
          f"**{(1-m)*100:.1f} %** [{(1-hi)*100:.1f}, {(1-lo)*100:.1f}] | {len(ratios)} |")
    cm = statistics.median(cratios); clo, chi = boot(cratios)
    cpu_rows.append((names[wl], statistics.median(pc), statistics.median(cc), cm, clo, chi,
                     statistics.median([c - p for p, c in zip(pc, cc)])))
print()
print("Server CPU per request (on-CPU ns of the nginx worker / redis-server per request served;")
print("per round captured/plain; implied loss = 1 − plain/captured, what a CPU-bound server loses):")
print()
print("| workload | plain ns/request | captured ns/request | added ns/request (median of rounds) | median CPU ratio [95 % CI] | implied loss [95 % CI] |")
print("|---|---|---|---|---|---|")
for name, p, c, cm, clo, chi, add in cpu_rows:
    print(f"| {name} | {p:.0f} | {c:.0f} | {add:+.0f} | {cm:.4f} [{clo:.4f}, {chi:.4f}] | "
          f"**{(1-1/cm)*100:.1f} %** [{(1-1/clo)*100:.1f}, {(1-1/chi)*100:.1f}] |")
print()
print("Per-round samples (captured/plain): ")
for wl in ("nginx", "get", "set"):
    rounds = sorted(r for (w, r) in data if w == wl)
    tr = " ".join(f"{data[(wl, r)]['cap'][0] / data[(wl, r)]['plain'][0]:.3f}" for r in rounds)
    cr = " ".join(f"{(data[(wl, r)]['cap'][2] / data[(wl, r)]['cap'][1]) / (data[(wl, r)]['plain'][2] / data[(wl, r)]['plain'][1]):.3f}" for r in rounds)
    print(f"- {names[wl]}: throughput {tr}; CPU/request {cr}")
PY
  echo
  echo "Capture summaries (what the traced servers logged, warm-up included):"
  echo "- nginx: \`${ngx_sum#wap5: }\`; its logs hold $ngx_sends sends (wrk counted $NGX_CAP_REQS responses in the"
  echo "  measured rounds, plus the warm-up)."
  echo "- redis: \`${redis_sum#wap5: }\`"
  echo
  echo "Target: ≤ 2 % throughput loss."
}
if [ -n "$OUT" ]; then report | tee "$OUT"; else report; fi
