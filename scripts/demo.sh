#!/usr/bin/env bash
# wap5 demo: trace a small real multi-process system and show what was captured.
#
#   curl ──HTTP──▶ nginx (master + 2 workers) ──HTTP──▶ python3 http.server
#
# Every process runs under `bin/wap5 run` (libsockcap.so preloaded), each as
# its own node; the logs land in $DEMO_DIR/logs. Then `wap5 dump` shows them.
#
# The demo is a list of steps (functions named step_*); later stages of the
# pipeline append their own step function and add it to STEPS at the bottom.
# Environment: DEMO_DIR (default: a new temp dir), REQUESTS (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WAP5=$ROOT/bin/wap5
DEMO_DIR=${DEMO_DIR:-$(mktemp -d /tmp/wap5-demo.XXXXXX)}
LOGS=$DEMO_DIR/logs
REQUESTS=${REQUESTS:-20}
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
  step "Capture: curl → nginx → python3 http.server, $REQUESTS requests"
  local up_port web_port www=$DEMO_DIR/www conf=$DEMO_DIR/nginx
  up_port=$(free_port)
  web_port=$(free_port)
  mkdir -p "$www/api" "$conf"
  for i in $(seq 1 5); do head -c $((i * 700)) /dev/zero | tr '\0' 'w' > "$www/api/item$i"; done
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
    location / { proxy_pass http://127.0.0.1:$up_port; }
  }
}
EOF
  echo "logs: $LOGS"
  "$WAP5" run --out "$LOGS" --node backend -- \
    "$PY" -m http.server --bind 127.0.0.1 --directory "$www" "$up_port" 2>"$DEMO_DIR/backend.err" &
  local up=$!
  PIDS+=("$up")
  wait_listen "$up_port"
  "$WAP5" run --out "$LOGS" --node frontend -- \
    nginx -p "$conf" -c "$conf/nginx.conf" -e "$conf/error.log" 2>"$DEMO_DIR/frontend.err" &
  local web=$!
  PIDS+=("$web")
  wait_listen "$web_port"

  local urls=()
  for i in $(seq 1 "$REQUESTS"); do urls+=(-o /dev/null "http://127.0.0.1:$web_port/api/item$(( (i - 1) % 5 + 1 ))"); done
  echo "\$ $WAP5 run --out $LOGS --node client -- curl -sS --fail-with-body -o /dev/null URL... ($REQUESTS URLs)"
  "$WAP5" run --out "$LOGS" --node client -- curl -sS --fail-with-body "${urls[@]}"
  stop "$web" QUIT
  stop "$up" TERM
  echo "--- nginx under wap5 run:"; grep '^wap5:' "$DEMO_DIR/frontend.err" || true
  echo "--- python3 under wap5 run:"; grep '^wap5:' "$DEMO_DIR/backend.err" || true
}

step_dump() {
  step "What each process did (wap5 dump --summary)"
  run "$WAP5" dump --summary "$LOGS"
  step "The frontend's socket calls, first lines (wap5 dump)"
  "$WAP5" dump "$LOGS/frontend" | head -n 24
  step "Machine-readable form (wap5 dump --json), first lines"
  "$WAP5" dump --json "$LOGS/client" | head -n 4
}

# Steps run in this order; append new ones here.
STEPS=(step_capture step_dump)
for s in "${STEPS[@]}"; do "$s"; done
printf '\nDemo files: %s\n' "$DEMO_DIR"
