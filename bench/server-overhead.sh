#!/usr/bin/env bash
# Throughput cost of capture on saturated servers: wrk against nginx (one
# worker, small static file) and redis-benchmark against redis-server, each
# with and without `wap5 run`, runs interleaved, medians and ratio.
#
#   bench/server-overhead.sh [RUNS] [SECONDS]      (defaults 5 and 5)
#
# Server pinned to CPU 0, load generator to CPU 1 (taskset), loopback only.
# Writes bench/results-server.md. Needs bin/ (make) and nginx, wrk, redis.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-5}
SECS=${2:-5}
WAP5=$ROOT/bin/wap5
OUT=$ROOT/bench/results-server.md
for p in nginx wrk redis-server redis-benchmark taskset; do
  command -v "$p" >/dev/null || { echo "server-overhead: $p not installed" >&2; exit 1; }
done
[ -x "$WAP5" ] && [ -f "$ROOT/bin/libsockcap.so" ] || { echo "server-overhead: run make first" >&2; exit 1; }

W=$(mktemp -d /tmp/wap5-bench.XXXXXX)
chmod 755 "$W" # nginx workers run as nobody
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    sleep 0.05
  done
  echo "server-overhead: nothing listens on $1" >&2; exit 1
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# --- nginx: one instance without capture, one with, both pinned to CPU 0.
mkdir -p "$W/www"
head -c 612 /dev/zero | tr '\0' 'n' > "$W/www/small.html"
nginx_conf() { # DIR PORT
  mkdir -p "$1"
  cat > "$1/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
# Root workers: a worker that drops to nobody stops logging after a few
# hundred thousand events (libsockcap bug, see TestNginxUnderLoad/nobody),
# which would make capture look cheaper than it is.
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
taskset -c 0 nginx -p "$W/nginx-plain" -c "$W/nginx-plain/nginx.conf" -e "$W/nginx-plain/error.log" &
NGX_PLAIN=$!
PIDS+=($!)
taskset -c 0 "$WAP5" run --out "$W/logs-nginx" --node nginx -- \
  nginx -p "$W/nginx-cap" -c "$W/nginx-cap/nginx.conf" -e "$W/nginx-cap/error.log" 2>"$W/nginx-cap.err" &
NGX_CAP=$!
PIDS+=("$NGX_CAP")
wait_listen "$NP"; wait_listen "$NC"

RP=$(free_port); RC=$(free_port)
redis_args=(--bind 127.0.0.1 --save "" --appendonly no --loglevel warning)
taskset -c 0 redis-server --port "$RP" "${redis_args[@]}" >/dev/null &
REDIS_PLAIN=$!
PIDS+=($!)
taskset -c 0 "$WAP5" run --out "$W/logs-redis" --node redis -- redis-server --port "$RC" "${redis_args[@]}" \
  >/dev/null 2>"$W/redis-cap.err" &
REDIS_CAP=$!
PIDS+=("$REDIS_CAP")
wait_listen "$RP"; wait_listen "$RC"

# cpu_ns PID: on-CPU time of all threads of PID so far (schedstat, ns).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
# server_pid WRAPPER: the server process itself (the nginx worker; redis).
nginx_worker() { pgrep -P "$1" | head -1; }

# wrk_run PORT: prints "req/s requests".
wrk_run() {
  local out
  out=$(taskset -c 1 wrk -t1 -c32 -d"${SECS}s" "http://127.0.0.1:$1/small.html")
  if grep -q 'Non-2xx' <<<"$out"; then echo "server-overhead: nginx answered errors:" >&2; echo "$out" >&2; exit 1; fi
  awk '/requests in/ {n = $1} /^Requests\/sec:/ {r = $2} END {print r, n}' <<<"$out"
}
redis_rps() { # PORT TEST
  taskset -c 1 redis-benchmark -p "$1" -q -t "$2" -n 200000 -c 32 | tr '\r' '\n' | awk -v t="$(echo "$2" | tr a-z A-Z)" '$1 == t":" {print $2}' | tail -1
}

declare -A S L R C
NGX_PLAIN_W=$(nginx_worker "$NGX_PLAIN"); NGX_CAP_W=$(nginx_worker "$(pgrep -P "$NGX_CAP")")
REDIS_PLAIN_P=$REDIS_PLAIN; REDIS_CAP_P=$(pgrep -P "$REDIS_CAP")
echo "warm-up"
wrk_run "$NP" >/dev/null
read -r _ NGX_CAP_REQS < <(wrk_run "$NC") # requests the captured nginx served, for the check below
for i in $(seq "$RUNS"); do
  # Alternate which variant goes first, so drift hits both alike.
  if (( i % 2 )); then order="plain cap"; else order="cap plain"; fi
  for v in $order; do
    port=$NP; [ "$v" = cap ] && port=$NC
    wpid=$NGX_PLAIN_W; [ "$v" = cap ] && wpid=$NGX_CAP_W
    c0=$(cpu_ns "$wpid")
    read -r r n < <(wrk_run "$port")
    c1=$(cpu_ns "$wpid")
    S[nginx-$v]+="$r "; L[nginx-$v]=$r
    [ "$v" = cap ] && NGX_CAP_REQS=$((NGX_CAP_REQS + n))
    C[nginx-$v]+="$(awk -v d=$((c1 - c0)) -v n="$n" 'BEGIN {printf "%.0f", d / n}') "
    rport=$RP; rpid=$REDIS_PLAIN_P; [ "$v" = cap ] && { rport=$RC; rpid=$REDIS_CAP_P; }
    c0=$(cpu_ns "$rpid")
    g=$(redis_rps "$rport" get); S[get-$v]+="$g "; L[get-$v]=$g
    c1=$(cpu_ns "$rpid")
    s=$(redis_rps "$rport" set); S[set-$v]+="$s "; L[set-$v]=$s
    c2=$(cpu_ns "$rpid")
    C[get-$v]+="$(( (c1 - c0) / 200000 )) "
    C[set-$v]+="$(( (c2 - c1) / 200000 )) "
    echo "run $i $v: nginx $r req/s, redis GET $g, SET $s"
  done
  # Each round's with/without ratio: robust to the machine's load drifting
  # between rounds (other jobs share it).
  for k in nginx get set; do
    R[$k]+="$(awk -v p="${L[$k-plain]}" -v c="${L[$k-cap]}" 'BEGIN {printf "%.4f", c / p}') "
  done
done

kill -QUIT "$NGX_CAP"; kill -TERM "$REDIS_CAP"
wait "$NGX_CAP" 2>/dev/null || true; wait "$REDIS_CAP" 2>/dev/null || true
ngx_sum=$(grep '^wap5: [0-9]* processes' "$W/nginx-cap.err" || true)
# Every response is one send (writev) in the worker's log: compare with wrk's count.
ngx_sends=$("$WAP5" dump --summary "$W/logs-nginx" | awk '{for (i = 1; i < NF; i++) if ($(i+1) == "send") s += $i} END {print s + 0}')
redis_sum=$(grep '^wap5: [0-9]* processes' "$W/redis-cap.err" || true)

{
  echo "# Server throughput with and without capture"
  echo
  echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'). Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r)."
  echo "Shared machine (other engineers' jobs running): load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "Command: \`bench/server-overhead.sh $RUNS $SECS\` — server on CPU 0, load generator on CPU 1 (taskset),"
  echo "loopback; $RUNS runs per variant, interleaved (order alternating), medians."
  echo "- nginx $(nginx -v 2>&1 | sed 's/.*\///'): 1 worker, 612-byte static file, \`wrk -t1 -c32 -d${SECS}s\`."
  echo "- redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'): \`redis-benchmark -q -t get|set -n 200000 -c 32\`."
  echo
  echo "| workload | without capture (median) | with capture (median) | ratio of medians | median of per-round ratios | loss | samples without / with |"
  echo "|---|---|---|---|---|---|---|"
  for k in nginx get set; do
    p=$(tr ' ' '\n' <<<"${S[$k-plain]}" | grep . | median)
    c=$(tr ' ' '\n' <<<"${S[$k-cap]}" | grep . | median)
    ratio=$(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.4f", c / p}')
    rr=$(tr ' ' '\n' <<<"${R[$k]}" | grep . | median)
    loss=$(awk -v r="$rr" 'BEGIN {printf "%.1f%%", (1 - r) * 100}')
    name=$k; [ "$k" = get ] && name="redis GET"; [ "$k" = set ] && name="redis SET"; [ "$k" = nginx ] && name="nginx (wrk)"
    echo "| $name | $p req/s | $c req/s | $ratio | $rr | $loss | ${S[$k-plain]}/ ${S[$k-cap]}|"
  done
  echo
  echo "Loss is 1 − the median of per-round ratios (each round measures both variants back to back)."
  echo
  echo "Server CPU time per request (on-CPU ns of the nginx worker / redis-server, all threads, from"
  echo "/proc/PID/task/*/schedstat, divided by the requests served): less sensitive to other jobs"
  echo "on this shared machine than throughput. At saturation, throughput loss = 1 − plain/captured."
  echo
  echo "| workload | ns/request without | ns/request with | added ns/request | implied loss | samples without / with |"
  echo "|---|---|---|---|---|---|"
  for k in nginx get set; do
    p=$(tr ' ' '\n' <<<"${C[$k-plain]}" | grep . | median)
    c=$(tr ' ' '\n' <<<"${C[$k-cap]}" | grep . | median)
    name=$k; [ "$k" = get ] && name="redis GET"; [ "$k" = set ] && name="redis SET"; [ "$k" = nginx ] && name="nginx (wrk)"
    echo "| $name | $p | $c | $(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.0f", c - p}') | $(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.1f%%", (1 - p / c) * 100}') | ${C[$k-plain]}/ ${C[$k-cap]}|"
  done
  echo
  echo "Capture summaries (what the traced servers logged over all runs):"
  echo "- nginx: \`${ngx_sum#wap5: }\`; wrk counted $NGX_CAP_REQS responses from it, its logs hold $ngx_sends sends"
  echo "  (the master's few channel messages included)."
  echo "- redis: \`${redis_sum#wap5: }\`"
  echo
  echo
  echo "Target: ≤ 2% throughput loss."
} > "$OUT"
cat "$OUT"
