#!/usr/bin/env bash
# AMX on a lent device machine (AMX code that has never run is not a feature). Two steps:
#   bash tools/device-check.sh pack   here: builds the test and benchmark binaries (Release) and
#                                      gathers them with every shared library they load, the dynamic
#                                      loader included, into .devcheck/ (git-ignored, ~40 MiB)
#   bash tools/device-check.sh run    on the device (the session's `run` tool, carry .devcheck): names
#                                      the CPU; where it has amx_tile, runs the AMX test cases and
#                                      bench_kernels' Gate-Up SwiGLU on amx against avx512 at 2 and all
#                                      threads. Needs nothing installed there: the carried loader runs
#                                      the binaries with the carried libraries. Under 8 minutes on 16 cores.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PACK="$ROOT/.devcheck"
# Test cases that need no fixture files or ckjit binary on a path (those are compiled in as this
# machine's paths): the AMX kernels against their twins, the vision int8 paths, the planner's caps.
CASES='AMX*,Int8Linear*,*every weight of every type gets a JIT kernel*,isa order*'

case "${1:-}" in
  pack)
    JOBS="${JOBS:-$(nproc)}"
    bash "$ROOT/tools/setup.sh"
    cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$ROOT/build" -j "$JOBS" --target ckjit_tests bench_kernels ckjit
    rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib"
    for b in tests/ckjit_tests perf/bench_kernels tools/ckjit; do
      cp "$ROOT/build/$b" "$PACK/bin/"
      ldd "$ROOT/build/$b" | grep -o '/[^ ]*' | while read -r lib; do
        cp -L "$lib" "$PACK/lib/" 2>/dev/null || true
      done
    done
    echo "device-check: packed $(du -sh "$PACK" | cut -f1) into $PACK; carry .devcheck and run: bash tools/device-check.sh run"
    ;;
  run)
    [ -x "$PACK/bin/ckjit_tests" ] || { echo "device-check: no $PACK (run 'pack' here first and carry .devcheck)" >&2; exit 2; }
    loader="$(ls "$PACK"/lib/ld-linux-x86-64.so.* | head -1)"
    on() { "$loader" --library-path "$PACK/lib" "$PACK/bin/$@"; }
    start=$(date +%s)
    echo "== machine"
    grep -m1 'model name' /proc/cpuinfo
    echo "cpus: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    on ckjit info || true
    if ! grep -qw amx_tile /proc/cpuinfo; then
      echo "device-check: this CPU has no amx_tile: nothing to check here"
      exit 0
    fi
    echo "== AMX test cases (ckjit_tests -tc='$CASES')"
    on ckjit_tests -tc="$CASES"
    threads=2; [ "$(nproc)" -gt 2 ] && threads="2,$(nproc)"
    for isa in amx avx512; do
      echo "== bench_kernels --isa $isa --only prefill-2b --threads $threads"
      on bench_kernels --isa "$isa" --only prefill-2b --threads "$threads" --runs 5 --no-ggml
    done
    echo "device-check: done in $(( $(date +%s) - start )) s"
    ;;
  *)
    echo "usage: bash tools/device-check.sh pack | run" >&2
    exit 2
    ;;
esac
