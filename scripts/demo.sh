#!/usr/bin/env bash
# wap5 demo: trace a small real multi-process system and analyse it.
#
#   curl ──HTTP──▶ nginx (master + 2 workers) ──HTTP──▶ python3 app ──RESP──▶ redis
#
# The app (scripts/demo_app.py) answers each request from the redis cache:
# GET the item; on a miss, build it (~3 ms) and SET it; then INCR a hit
# counter. Every process runs under `bin/wap5 run` (libsockcap.so preloaded),
# each server as its own node (frontend, app, cache; curl is client), all on
# loopback; the logs land in $DEMO_DIR/logs. `wap5 dump` shows what was
# recorded; `wap5 analyze` reconciles the logs into one message trace, checks
# the clocks, links the messages into causal paths and prints its report
# (files in $DEMO_DIR/report).
#
# The demo is a list of steps (functions named step_*); later stages of the
# pipeline append their own step function and add it to STEPS at the bottom.
# Environment: DEMO_DIR (default: a new temp dir), REQUESTS (default 40),
# CLIENTS (default 1: curl processes sending the requests at the same time).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WAP5=$ROOT/bin/wap5
DEMO_DIR=${DEMO_DIR:-$(mktemp -d /tmp/wap5-demo.XXXXXX)}
LOGS=$DEMO_DIR/logs
REQUESTS=${REQUESTS:-40}
CLIENTS=${CLIENTS:-1}
# Debian's python3 (a pyenv shim in PATH would add a bash wrapper per call).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
PIDS=()

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_listen PORT: until something listens on 127.0.0.1:PORT (without
# connecting, so that no probe shows up in the logs).
wait_listen() {
  for _ in $(seq 200); do
    ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
    sleep 0.05
  done
  echo "demo: nothing listens on port $1" >&2
  return 1
}

# stop PID SIGNAL: stop a `wap5 run` (it forwards the signal) and wait for it.
stop() {
  kill -s "$2" "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

step_capture() {
  step "Capture: curl → nginx → python3 app → redis, $REQUESTS requests"
  local app_port web_port cache_port conf=$DEMO_DIR/nginx
  app_port=$(free_port)
  web_port=$(free_port)
  cache_port=$(free_port)
  mkdir -p "$conf" "$DEMO_DIR/redis"
  cat > "$conf/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
pid $conf/nginx.pid;
error_log $conf/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $conf/body;
  proxy_temp_path $conf/proxy;
  fastcgi_temp_path $conf/fastcgi;
  uwsgi_temp_path $conf/uwsgi;
  scgi_temp_path $conf/scgi;
  server {
    listen 127.0.0.1:$web_port;
    location / { proxy_pass http://127.0.0.1:$app_port; }
  }
}
EOF
  echo "logs: $LOGS"
  "$WAP5" run --out "$LOGS" --node cache -- \
    redis-server --bind 127.0.0.1 --port "$cache_port" --save '' --appendonly no \
    --dir "$DEMO_DIR/redis" --logfile "$DEMO_DIR/redis/redis.log" 2>"$DEMO_DIR/cache.err" &
  local cache=$!
  PIDS+=("$cache")
  wait_listen "$cache_port"
  "$WAP5" run --out "$LOGS" --node app -- \
    "$PY" "$ROOT/scripts/demo_app.py" "$app_port" "$cache_port" 2>"$DEMO_DIR/app.err" &
  local app=$!
  PIDS+=("$app")
  wait_listen "$app_port"
  "$WAP5" run --out "$LOGS" --node frontend -- \
    nginx -p "$conf" -c "$conf/nginx.conf" -e "$conf/error.log" 2>"$DEMO_DIR/frontend.err" &
  local web=$!
  PIDS+=("$web")
  wait_listen "$web_port"

  local urls=() k clients=()
  for i in $(seq 1 $((REQUESTS / CLIENTS))); do urls+=(-o /dev/null "http://127.0.0.1:$web_port/api/item$(((i - 1) % 5 + 1))"); done
  echo "\$ $WAP5 run --out $LOGS --node client -- curl -sS --fail-with-body -o /dev/null URL... ($((REQUESTS / CLIENTS)) URLs, 5 items; $CLIENTS at once)"
  for k in $(seq 1 "$CLIENTS"); do
    "$WAP5" run --out "$LOGS" --node client -- curl -sS --fail-with-body "${urls[@]}" &
    clients+=($!)
  done
  for k in "${clients[@]}"; do wait "$k"; done
  stop "$web" QUIT
  stop "$app" TERM
  stop "$cache" TERM
  PIDS=()
  for n in frontend app cache; do
    echo "--- $n under wap5 run:"
    grep '^wap5:' "$DEMO_DIR/$n.err" || true
  done
}

step_dump() {
  step "What each process did (wap5 dump --summary)"
  run "$WAP5" dump --summary "$LOGS"
  step "The app's socket calls, first lines (wap5 dump)"
  # awk reads to the end: head would end the pipe early (SIGPIPE under pipefail).
  "$WAP5" dump "$LOGS/app" | awk '!/^#/ && n++ < 12'
}

step_analyze() {
  step "The analysis: reconcile → clock offsets → message linking → report (wap5 analyze)"
  run "$WAP5" analyze -o "$DEMO_DIR/report" "$LOGS"
  step "Files of the analysis"
  ls -l "$DEMO_DIR/report"
}

# Steps run in this order; append new ones here.
STEPS=(step_capture step_dump step_analyze)
for s in "${STEPS[@]}"; do "$s"; done
printf '\nDemo files: %s\n' "$DEMO_DIR"
