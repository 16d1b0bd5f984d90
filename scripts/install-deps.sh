#!/usr/bin/env bash
# Installs the Debian packages that the tests and the demo need (idempotent).
set -euo pipefail
pkgs=(curl python3 iproute2 iptables tcpdump faketime libfaketime nginx redis-server memcached postgresql strace ltrace wrk redis-tools libpython3.11-testsuite valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Services are started by the tests themselves; keep the packaged ones stopped.
for s in nginx redis-server memcached postgresql; do
  (service "$s" stop >/dev/null 2>&1 || true)
done
go mod download
