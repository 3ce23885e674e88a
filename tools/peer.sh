#!/usr/bin/env bash
# Prints the path of a llama.cpp peer-cli (../shared/peer, b10256 with mtmd) that runs MODEL here:
#   bash tools/peer.sh [MODEL]
# ../shared/peer/build.sh builds with -march=native, so on a CPU with AMX llama.cpp's AMX matmul is
# compiled in; on Sapphire Rapids its ggml_backend_amx_mul_mat segfaults on the first batch of
# several rows (any model, 1 or 2 threads; llama.cpp issue #20824, no fix upstream). Given MODEL, the
# default build first runs an 8-word prompt of it; if that dies by a signal on an AMX CPU, the same
# sources are built again with -mno-amx-* (llama.cpp's AVX-512 VNNI, CPU repack and llamafile paths
# stay) into PEER_DIR-noamx, and stderr says so: numbers measured with it are against llama.cpp
# without AMX. PEER=path skips all this.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SHARED="$ROOT/../shared/peer"
if [ -n "${PEER:-}" ]; then echo "$PEER"; exit 0; fi
CACHE="${PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ckjit-peer}"
peer="$(PEER_DIR="$CACHE" bash "$SHARED/build.sh" 2>/dev/null)"
model="${1:-}"
probe="one two three four five six seven eight"  # a batch of several rows: the AMX GEMM path
if [ -z "$model" ]; then echo "$peer"; exit 0; fi
[ -f "$model" ] || { echo "peer.sh: no model file $model" >&2; exit 1; }

probe_rc() {  # the exit status of the probe (a crash's "Segmentation fault" line is not printed)
  { "$1" complete -m "$model" -p "$probe" -n 1 >/dev/null 2>&1; echo $?; } 2>/dev/null
}
rc="$(probe_rc "$peer")"
if [ "$rc" -eq 0 ]; then echo "$peer"; exit 0; fi
if [ "$rc" -lt 128 ] || ! grep -qw amx_int8 /proc/cpuinfo; then
  echo "peer.sh: $peer failed on $model (exit $rc), and not by the AMX crash this script knows" >&2
  exit 1
fi
echo "peer.sh: llama.cpp's AMX build died by signal $((rc - 128)) decoding $model (llama.cpp #20824);" \
  "using llama.cpp built without AMX (-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)" >&2
NOAMX="$CACHE-noamx"
mkdir -p "$NOAMX"
# The same unpacked npm sources as the default build (no second download).
for d in src npm extra; do [ -e "$NOAMX/$d" ] || ln -s "$CACHE/$d" "$NOAMX/$d"; done
flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"  # explicit -mno-* win over -march=native in GCC
peer="$(CFLAGS="$flags" CXXFLAGS="$flags" PEER_DIR="$NOAMX" bash "$SHARED/build.sh" "$NOAMX" 2>/dev/null)"
if nm -C "$peer" | grep -q "amx_mul_mat"; then
  echo "peer.sh: $peer still has AMX code (a configure cache from other flags? remove $NOAMX/build)" >&2
  exit 1
fi
rc="$(probe_rc "$peer")"
[ "$rc" -eq 0 ] || { echo "peer.sh: the no-AMX build failed on $model too (exit $rc)" >&2; exit 1; }
echo "$peer"
