#!/usr/bin/env bash
# Writes the HAProxy configuration for ckjit serve replicas on this machine to stdout, from the
# template beside it (health checks on /health, least-connections balancing, retries on another
# replica):   bash tools/serve/haproxy_config.sh FRONTEND REPLICA... > haproxy.cfg
# e.g.        bash tools/serve/haproxy_config.sh 127.0.0.1:8080 127.0.0.1:8081 127.0.0.1:8082
# FRONTEND may be fd@N: a listening socket the parent bound and passed down (a supervisor's, or a
# test's that holds its port from the start).
# then        haproxy -db -f haproxy.cfg
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bash tools/serve/haproxy_config.sh FRONTEND REPLICA... (each HOST:PORT; FRONTEND may be fd@N)" >&2
  exit 2
fi
[[ "$1" =~ ^[A-Za-z0-9.-]+:[0-9]+$ || "$1" =~ ^fd@[0-9]+$ ]] || { echo "haproxy_config: '$1' is not HOST:PORT or fd@N" >&2; exit 2; }
for a in "${@:2}"; do
  [[ "$a" =~ ^[A-Za-z0-9.-]+:[0-9]+$ ]] || { echo "haproxy_config: '$a' is not HOST:PORT" >&2; exit 2; }
done
front="$1"; shift
servers="" i=0
for r in "$@"; do i=$((i + 1)); servers+="  server r$i $r check"$'\n'; done
template="$(dirname "$0")/haproxy.cfg.in"
while IFS= read -r line; do
  case "$line" in
    *@FRONTEND@*) printf '%s\n' "${line//@FRONTEND@/$front}" ;;
    @SERVERS@) printf '%s' "$servers" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$template"
