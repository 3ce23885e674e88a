#!/usr/bin/env bash
# The README's two commands:
#   bash tools/dev.sh run [ckjit run options]   set up, build, run `ckjit run`
#   bash tools/dev.sh test                      set up, build (Release, ASan+UBSan, TSan for the C API), run every test, fuzz
#   bash tools/dev.sh test-arm64                cross-build for AArch64 (cmake/aarch64.cmake) and run its tests under
#                                               qemu-aarch64 on CPU models without and with SVE
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"; shift || true
JOBS="${JOBS:-$(nproc)}"

build() {  # build <dir> <build type> [targets...]
  bash "$ROOT/tools/setup.sh"
  cmake -S "$ROOT" -B "$ROOT/$1" -G Ninja -DCMAKE_BUILD_TYPE="$2" >/dev/null
  local dir="$1"; shift 2
  if [ $# -gt 0 ]; then cmake --build "$ROOT/$dir" -j "$JOBS" --target "$@"; else cmake --build "$ROOT/$dir" -j "$JOBS"; fi
}

case "$cmd" in
  run)
    build build Release
    exec "$ROOT/build/tools/ckjit" run "$@"
    ;;
  test)
    build build Release
    (cd "$ROOT/build" && ctest --output-on-failure -j "$JOBS" "$@")
    # Under ASan+UBSan: everything but the slow suites (hostile input must fail cleanly there too).
    build build-sanitize Sanitize
    (cd "$ROOT/build-sanitize" && ctest --output-on-failure -j "$JOBS" -LE "slow" "$@")
    # Under ThreadSanitizer: the C API's tests (several sessions on one model in several threads) and
    # `ckjit serve --parallel 2` with concurrent requests.
    build build-tsan Tsan ckjit_api_tests ckjit
    (cd "$ROOT/build-tsan" && ctest --output-on-failure -j "$JOBS" -L "^(api|tsan)$" "$@")
    # libFuzzer (clang, ASan+UBSan): every input-surface target for a bounded time; a crash fails.
    bash "$ROOT/tests/fuzz/build.sh" "${FUZZ_SECONDS:-45}"
    ;;
  test-arm64)
    # The portable layers (cmake/portable_subset.cmake) on AArch64: cortex-a76 (Advanced SIMD +
    # dotprod, no SVE) and max (SVE, SVE2, i8mm, bf16). Issue 29: the JIT's asmjit emitters come next.
    bash "$ROOT/tools/setup.sh"
    bash "$ROOT/tools/setup_arm64.sh"
    cmake -S "$ROOT" -B "$ROOT/build-arm64" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64.cmake" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$ROOT/build-arm64" -j "$JOBS"
    # The x86 ckjit, for the cross-architecture comparison below.
    build build Release ckjit
    cmp_dir="$(mktemp -d)"
    trap 'rm -rf "$cmp_dir"' EXIT
    "$ROOT/build/tools/ckjit" synth -q --preset tiny --seed 3 --out "$cmp_dir/x86" >/dev/null
    for cpu in cortex-a76 max; do
      echo "== qemu-aarch64 -cpu $cpu: $(QEMU_CPU=$cpu qemu-aarch64 "$ROOT/build-arm64/tools/ckjit" info | head -1)"
      (cd "$ROOT/build-arm64" && QEMU_CPU=$cpu ctest --output-on-failure -j "$JOBS" "$@")
      # The synthesizer (random streams, Q4_K / Q6_K / F16 quantizers, GGUF writer) writes the same
      # bytes on AArch64 as on x86.
      QEMU_CPU=$cpu qemu-aarch64 "$ROOT/build-arm64/tools/ckjit" synth -q --preset tiny --seed 3 --out "$cmp_dir/$cpu" >/dev/null
      for f in tiny-Q4_K_M.gguf mmproj-tiny-f16.gguf; do
        cmp "$cmp_dir/x86/$f" "$cmp_dir/$cpu/$f" || { echo "test-arm64: $f differs between x86 and AArch64 ($cpu)" >&2; exit 1; }
      done
      echo "== $cpu: the synthesized tiny pair is byte-identical to x86's"
    done
    ;;
  *)
    echo "usage: bash tools/dev.sh run [ckjit run options] | test | test-arm64" >&2
    exit 2
    ;;
esac
