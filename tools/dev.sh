#!/usr/bin/env bash
# The README's two commands:
#   bash tools/dev.sh run [ckjit run options]   set up, build, run `ckjit run`
#   bash tools/dev.sh test                      set up, build (Release, ASan+UBSan, TSan for the C API), run every test, fuzz
#   bash tools/dev.sh check                     the inner loop: Release build and every test not labelled slow or e2e
#   bash tools/dev.sh test-arm64                cross-build for AArch64 (cmake/aarch64.cmake) and run its tests under
#                                               qemu-aarch64 on CPU models without and with SVE
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"; shift || true
JOBS="${JOBS:-$(nproc)}"

build() {  # build <dir> <build type> [targets...]; CMAKE_ARGS: more -D options
  bash "$ROOT/tools/setup.sh"
  # shellcheck disable=SC2086
  cmake -S "$ROOT" -B "$ROOT/$1" -G Ninja -DCMAKE_BUILD_TYPE="$2" ${CMAKE_ARGS:-} >/dev/null
  local dir="$1"; shift 2
  if [ $# -gt 0 ]; then cmake --build "$ROOT/$dir" -j "$JOBS" --target "$@"; else cmake --build "$ROOT/$dir" -j "$JOBS"; fi
}

# Each stage's wall time, printed at the end; a stage that fails ends the script (set -e) and is
# printed as failed.
STAGES=()
CURRENT_STAGE="" CURRENT_START=0
stage() {  # stage NAME command...
  CURRENT_STAGE="$1" CURRENT_START=$SECONDS
  shift
  "$@"
  STAGES+=("$(printf '%-36s %5d s' "$CURRENT_STAGE" $((SECONDS - CURRENT_START)))")
  CURRENT_STAGE=""
}
print_stages() {
  [ -z "$CURRENT_STAGE" ] || STAGES+=("$(printf '%-36s %5d s (failed)' "$CURRENT_STAGE" $((SECONDS - CURRENT_START)))")
  ((${#STAGES[@]})) || return 0
  echo "== stage times (wall):"
  printf '   %s\n' "${STAGES[@]}"
}
# One build at a time may run beside a test stage at the lowest CPU priority (nice 19), to take the
# CPU the tests leave idle (waiting on servers, timers, child processes: 12-25 % of two cores here).
# Measured on Zen 5, 2 cores (tests/README.md): it gains little, because the tests beside it still
# slow down (Release tests ~45 s longer beside the ASan build). Its output goes to build-logs/; it
# is waited for as a stage of its own (the rest of its time), and its log is printed if it failed.
BG_PID="" BG_NAME="" BG_LOG="" BG_START=0
bg_start() {  # bg_start NAME command...
  BG_NAME="$1"
  shift
  mkdir -p "$ROOT/build-logs"
  BG_LOG="$ROOT/build-logs/$(tr -c 'a-zA-Z0-9\n' '_' <<<"$BG_NAME").log"
  BG_START=$SECONDS
  (renice -n 19 -p "$BASHPID" >/dev/null && "$@") >"$BG_LOG" 2>&1 &
  BG_PID=$!
}
bg_wait() {  # waits for the build bg_start began; fails if it failed
  local rc=0
  wait "$BG_PID" || rc=$?
  BG_PID=""
  if [ "$rc" -ne 0 ]; then
    tail -60 "$BG_LOG" >&2
    echo "$BG_NAME failed (exit $rc; log: $BG_LOG)" >&2
    return "$rc"
  fi
  echo "$BG_NAME: done, $((SECONDS - BG_START)) s after it began beside the stage before"
}
with_clang() {  # with_clang command...: runs it with CC/CXX set to clang where clang++ is installed
  if command -v clang++ >/dev/null && command -v clang >/dev/null; then CC=clang CXX=clang++ "$@"; else "$@"; fi
}
# TSan by clang too where it is installed: 280 s of CPU for this build against GCC 12's 404 s here.
build_tsan_and_fuzz() { with_clang build build-tsan Tsan ckjit_api_tests ckjit && bash "$ROOT/tests/fuzz/build.sh"; }
bg_stop() { [ -z "$BG_PID" ] || kill -- "$BG_PID" 2>/dev/null || true; }

run_ctest() {  # run_ctest BUILD_DIR [ctest args...]
  local dir="$1"
  shift
  (cd "$ROOT/$dir" && ctest --output-on-failure --no-tests=error -j "$JOBS" "$@")
}

case "$cmd" in
  run)
    build build Release
    # No options and a trained model in assets/tiny-ocr: it reads its sample page, then the 2B-shaped
    # random pair shows the speed of each phase on assets/sample-page.png.
    if [ $# -eq 0 ] && [ -z "${CKJIT_DEFAULT_PRESET:-}" ] && [ -f "$ROOT/assets/tiny-ocr/tiny-ocr-Q8_0.compact.gguf" ]; then
      echo "== 1/2: the tiny OCR model trained by tools/train_tiny_ocr reads its sample page (assets/tiny-ocr)" >&2
      "$ROOT/build/tools/ckjit" run
      echo "== 2/2: a 2B-shaped random-weight pair reads assets/sample-page.png: the time of each phase (its text is noise)" >&2
      CKJIT_DEFAULT_PRESET=2b exec "$ROOT/build/tools/ckjit" run
    fi
    exec "$ROOT/build/tools/ckjit" run "$@"
    ;;
  test)
    trap 'bg_stop; print_stages' EXIT
    stage "setup" bash "$ROOT/tools/setup.sh"
    stage "build: Release" build build Release
    # Under ASan+UBSan: everything but the slow suites, the long end-to-end runs and the sweeps (the
    # third cap of the cap matrices, most parity cases: labels slow, e2e, sweep; tests/README.md;
    # hostile input must fail cleanly there too); the benchmarks are not built (no test runs them).
    # Its build begins beside the Release tests (bg_start, below).
    # Compiled by clang where it is installed (tools/setup.sh installs it for the fuzz build): it
    # compiles this build in ~25 % less CPU time than GCC 12 (588 s against ~770 s here; the
    # Release build stays GCC's). A folder configured before keeps its compiler (CMake's cache).
    CMAKE_ARGS="${CMAKE_ARGS:-} -DCKJIT_BUILD_PERF=OFF" bg_start "build: ASan+UBSan" with_clang build build-sanitize Sanitize
    stage "tests: Release (ASan+UBSan build beside)" run_ctest build "$@"
    stage "build: ASan+UBSan (the rest)" bg_wait
    # Under ThreadSanitizer: the cases with concurrent sessions (label threads: several sessions on one
    # model in several threads, the batcher, the thread pool under one page) and `ckjit serve
    # --parallel 2` with concurrent requests. Its build and the fuzz build begin beside the ASan tests.
    CMAKE_ARGS="${CMAKE_ARGS:-} -DCKJIT_BUILD_PERF=OFF" bg_start "build: TSan, fuzz" build_tsan_and_fuzz
    stage "tests: ASan+UBSan (TSan, fuzz builds beside)" run_ctest build-sanitize -LE '^(slow|e2e|sweep)$' "$@"
    stage "build: TSan, fuzz (the rest)" bg_wait
    stage "tests: TSan" run_ctest build-tsan -L '^(threads|tsan)$' "$@"
    # libFuzzer (clang, ASan+UBSan): every input-surface target for a bounded time, JOBS at once; a crash fails.
    stage "fuzz: ${FUZZ_SECONDS:-45} s per target" bash "$ROOT/tests/fuzz/build.sh" --run "${FUZZ_SECONDS:-45}"
    ;;
  check)
    # The inner loop (minutes): the Release build and every test but the slow and end-to-end ones.
    # `.ci/run` (tools/dev.sh test) runs everything.
    trap print_stages EXIT
    stage "build: Release" build build Release
    stage "tests: Release, not slow or e2e" run_ctest build -LE '^(slow|e2e)$' "$@"
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
    echo "usage: bash tools/dev.sh run [ckjit run options] | test | check | test-arm64" >&2
    exit 2
    ;;
esac
