#!/usr/bin/env bash
# The README's two commands:
#   bash tools/dev.sh run [ckjit run options]   set up, build, run `ckjit run`
#   bash tools/dev.sh test                      set up, build (Release, ASan+UBSan, TSan for the C API), run every test, fuzz
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
  *)
    echo "usage: bash tools/dev.sh run [ckjit run options] | test" >&2
    exit 2
    ;;
esac
