# Sourced by the serve test scripts: starts `ckjit serve` on a synthesized tiny pair in a temporary
# folder and waits for its listening line. Sets tmp (removed on exit), pid (killed on exit), model,
# mmproj and port; the server's stderr is $tmp/err.
#   start_tiny_server CKJIT_BINARY NAME WAIT_TENTHS [serve flags...]
tmp="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

start_tiny_server() {
  local ckjit="$1" name="$2" tenths="$3"
  shift 3
  "$ckjit" synth --preset tiny --out "$tmp/m" >/dev/null 2>&1
  model="$(ls "$tmp"/m/*-Q4_K_M.gguf)"
  mmproj="$(ls "$tmp"/m/mmproj-*.gguf)"
  "$ckjit" serve -m "$model" --mmproj "$mmproj" --port 0 "$@" 2>"$tmp/err" &
  pid=$!
  port=""
  for _ in $(seq 1 "$tenths"); do
    port="$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/err")"
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/err" >&2; echo "$name: the server exited early" >&2; exit 1; }
    sleep 0.1
  done
  cat "$tmp/err" >&2
  echo "$name: no listening line" >&2
  exit 1
}
