#!/usr/bin/env bash
# Starts `ckjit serve` on a synthesized tiny pair with an API key and runs the official `openai`
# npm client against it (openai_client.cjs). Exit 77 (ctest: skipped) when node or the package is
# missing (tools/setup.sh installs both).
#   bash tests/serve/openai_client.sh CKJIT_BINARY IMAGE.png OPENAI_PACKAGE_DIR
set -euo pipefail
CKJIT="$1"
IMAGE="$2"
PKG="$3"
command -v node >/dev/null || { echo "openai_client: node is not installed (tools/setup.sh)"; exit 77; }
[ -f "$PKG/package.json" ] || { echo "openai_client: no openai package at $PKG (tools/setup.sh)"; exit 77; }
source "$(dirname "$0")/tiny_server.sh"
key="test-key-$RANDOM"
start_tiny_server "$CKJIT" openai_client 300 -t 2 -c 1024 --image-max-tokens 64 --api-key "$key"
node "$(dirname "$0")/openai_client.cjs" "$PKG" "http://127.0.0.1:$port/v1" "$key" "$IMAGE"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" = 0 ] || { tail -20 "$tmp/err" >&2; echo "openai_client: the server ended with status $status" >&2; exit 1; }
