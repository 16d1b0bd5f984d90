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
PIDS+=($!)
taskset -c 0 "$WAP5" run --out "$W/logs-nginx" --node nginx -- \
  nginx -p "$W/nginx-cap" -c "$W/nginx-cap/nginx.conf" -e "$W/nginx-cap/error.log" 2>"$W/nginx-cap.err" &
NGX_CAP=$!
PIDS+=("$NGX_CAP")
wait_listen "$NP"; wait_listen "$NC"

RP=$(free_port); RC=$(free_port)
redis_args=(--bind 127.0.0.1 --save "" --appendonly no --loglevel warning)
taskset -c 0 redis-server --port "$RP" "${redis_args[@]}" >/dev/null &
PIDS+=($!)
taskset -c 0 "$WAP5" run --out "$W/logs-redis" --node redis -- redis-server --port "$RC" "${redis_args[@]}" \
  >/dev/null 2>"$W/redis-cap.err" &
REDIS_CAP=$!
PIDS+=("$REDIS_CAP")
wait_listen "$RP"; wait_listen "$RC"

wrk_rps() { taskset -c 1 wrk -t1 -c32 -d"${SECS}s" "http://127.0.0.1:$1/small.html" | awk '/^Requests\/sec:/ {print $2}'; }
redis_rps() { # PORT TEST
  taskset -c 1 redis-benchmark -p "$1" -q -t "$2" -n 200000 -c 32 | tr '\r' '\n' | awk -v t="$(echo "$2" | tr a-z A-Z)" '$1 == t":" {print $2}' | tail -1
}

declare -A S
echo "warm-up"; wrk_rps "$NP" >/dev/null; wrk_rps "$NC" >/dev/null
for i in $(seq "$RUNS"); do
  # Alternate which variant goes first, so drift hits both alike.
  if (( i % 2 )); then order="plain cap"; else order="cap plain"; fi
  for v in $order; do
    port=$NP; [ "$v" = cap ] && port=$NC
    r=$(wrk_rps "$port"); S[nginx-$v]+="$r "
    rport=$RP; [ "$v" = cap ] && rport=$RC
    g=$(redis_rps "$rport" get); S[get-$v]+="$g "
    s=$(redis_rps "$rport" set); S[set-$v]+="$s "
    echo "run $i $v: nginx $r req/s, redis GET $g, SET $s"
  done
done

kill -QUIT "$NGX_CAP"; kill -TERM "$REDIS_CAP"
wait "$NGX_CAP" 2>/dev/null || true; wait "$REDIS_CAP" 2>/dev/null || true
ngx_sum=$(grep '^wap5: [0-9]* processes' "$W/nginx-cap.err" || true)
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
  echo "| workload | without capture (median) | with capture (median) | ratio | loss | samples without / with |"
  echo "|---|---|---|---|---|---|"
  for k in nginx get set; do
    p=$(tr ' ' '\n' <<<"${S[$k-plain]}" | grep . | median)
    c=$(tr ' ' '\n' <<<"${S[$k-cap]}" | grep . | median)
    ratio=$(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.4f", c / p}')
    loss=$(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.1f%%", (1 - c / p) * 100}')
    name=$k; [ "$k" = get ] && name="redis GET"; [ "$k" = set ] && name="redis SET"; [ "$k" = nginx ] && name="nginx (wrk)"
    echo "| $name | $p req/s | $c req/s | $ratio | $loss | ${S[$k-plain]}/ ${S[$k-cap]}|"
  done
  echo
  echo "Capture summaries (what the traced servers logged over all runs):"
  echo "- nginx: \`${ngx_sum#wap5: }\`"
  echo "- redis: \`${redis_sum#wap5: }\`"
  echo
  echo "Target: ≤ 2% throughput loss."
} > "$OUT"
cat "$OUT"
