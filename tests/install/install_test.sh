#!/usr/bin/env bash
# Installs the build into a temporary prefix and uses it as an embedder would: examples/read_page (and read_pages_together, two pages in one batch)
# built with find_package(ckjit) and with pkg-config (shared and static), run on a tiny synthesized
# pair; the installed .so exports only ckjit_* and has the soname libckjit.so.0.3 (0.x: one per minor version).
#   install_test.sh BUILD_DIR SOURCE_DIR BUILD_TYPE LIBDIR C_COMPILER CMAKE GENERATOR
set -euo pipefail
BUILD="$1" SRC="$2" TYPE="$3" LIBDIR="$4" CC="$5" CMAKE="$6" GEN="$7"

# A sanitized library needs its runtime first in the process; the packaging is the same in Release.
case "$TYPE" in Sanitize|Tsan) echo "[ckjit-skip] packaging is checked in a non-sanitizer build ($TYPE)"; exit 0 ;; esac
for tool in pkg-config nm readelf; do
  command -v "$tool" >/dev/null || { echo "install test: '$tool' not found (bash tools/setup.sh installs it)" >&2; exit 1; }
done

TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
P="$TMP/prefix" L="$TMP/prefix/$LIBDIR"
step() { echo "== $*"; }
fail() { echo "install test: FAILED: $*" >&2; exit 1; }

step "cmake --install into $P"
"$CMAKE" --install "$BUILD" --prefix "$P" >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install"; }
# The version the build was configured with (CMakeLists.txt's project()), so a release bump needs no edit here.
VERSION="$(sed -n 's/^project(ckjit VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")"
[ -n "$VERSION" ] || fail "no project(ckjit VERSION ...) in $SRC/CMakeLists.txt"
for f in include/ckjit.h "$LIBDIR/libckjit.a" "$LIBDIR/libckjit.so.$VERSION" "$LIBDIR/pkgconfig/ckjit.pc" \
         "$LIBDIR/cmake/ckjit/ckjitConfig.cmake" "$LIBDIR/cmake/ckjit/ckjitConfigVersion.cmake"; do
  [ -f "$P/$f" ] || fail "$f not installed"
done
for f in libckjit.so libckjit.so.0.3; do [ -L "$L/$f" ] || fail "$LIBDIR/$f is not a symlink"; done
others="$(cd "$P" && find . -type f ! -path ./include/ckjit.h ! -path "./$LIBDIR/libckjit.*" ! -path "./$LIBDIR/cmake/ckjit/*" ! -path "./$LIBDIR/pkgconfig/ckjit.pc")"
[ -z "$others" ] || fail "installed more than the library and its header: $others"

step "exported symbols and soname"
exported="$(nm -D --defined-only "$L/libckjit.so" | awk '{print $NF}' | grep -v '^ckjit_' || true)"
[ -z "$exported" ] || fail "libckjit.so exports more than ckjit_*: $(echo $exported | head -c 400)"
grep -q ' ckjit_model_load$' <<<"$(nm -D --defined-only "$L/libckjit.so")" || fail "ckjit_model_load not exported"
soname="$(readelf -d "$L/libckjit.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = libckjit.so.0.3 ] || fail "soname is '$soname', not libckjit.so.0.3"

step "a tiny pair"
"$BUILD/tools/ckjit" synth -q --preset tiny --seed 3 --name t --out "$TMP/model" || fail "ckjit synth"
IMAGE="$SRC/tests/fixtures/vision/images/square-64.png"
run_example() {  # run_example NAME BINARY [env...]: exit 0 and a timings line
  local name="$1" bin="$2"; shift 2
  env "$@" "$bin" "$TMP/model/t-Q4_K_M.gguf" "$TMP/model/mmproj-t-f16.gguf" "$IMAGE" >"$TMP/$name.out" 2>"$TMP/$name.err" \
    || { cat "$TMP/$name.out" "$TMP/$name.err"; fail "$name exited non-zero"; }
  grep -q '^timings: load .* ms, encode .* ms, prefill .* ms .* decode .* ms' "$TMP/$name.out" \
    || { cat "$TMP/$name.out" "$TMP/$name.err"; fail "$name printed no timings line"; }
  grep -q 'loading: 100%' "$TMP/$name.err" || fail "$name printed no load progress"
  echo "$name: $(tail -n 1 "$TMP/$name.out")"
}
no_libckjit_needed() { ! grep -q 'NEEDED.*libckjit' <<<"$(readelf -d "$1")" || fail "$1 needs libckjit.so"; }

step "(a) find_package(ckjit): ckjit::ckjit and ckjit::ckjit_static"
"$CMAKE" -S "$SRC/examples" -B "$TMP/ex" -G "$GEN" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$CC" \
  -DCMAKE_C_FLAGS="-Wall -Werror" -DCMAKE_PREFIX_PATH="$P" -DREAD_PAGE_STATIC=ON >"$TMP/ex.log" \
  || { cat "$TMP/ex.log"; fail "configuring examples/"; }
"$CMAKE" --build "$TMP/ex" >>"$TMP/ex.log" || { cat "$TMP/ex.log"; fail "building examples/"; }
run_example cmake-shared "$TMP/ex/read_page" LD_LIBRARY_PATH="$L"
no_libckjit_needed "$TMP/ex/read_page_static"
run_example cmake-static "$TMP/ex/read_page_static"
# Two pages generated together (ckjit_generate_batch), shared library.
IMAGE2="$SRC/tests/fixtures/vision/images/grey-96x80.png"
LD_LIBRARY_PATH="$L" "$TMP/ex/read_pages_together" "$TMP/model/t-Q4_K_M.gguf" "$TMP/model/mmproj-t-f16.gguf" "$IMAGE" "$IMAGE2" \
  >"$TMP/together.out" 2>"$TMP/together.err" || { cat "$TMP/together.out" "$TMP/together.err"; fail "read_pages_together exited non-zero"; }
[ "$(grep -c '^timings: encode' "$TMP/together.out")" = 2 ] || { cat "$TMP/together.out"; fail "read_pages_together: not two pages"; }
echo "read_pages_together: $(grep -c '^page ' "$TMP/together.out") pages"

step "(b) pkg-config"
export PKG_CONFIG_PATH="$L/pkgconfig"
cflags="$(pkg-config --cflags ckjit)" libs="$(pkg-config --libs ckjit)" static_libs="$(pkg-config --static --libs ckjit)"
echo "cflags: $cflags | libs: $libs | static: $static_libs"
"$CC" -std=c99 -Wall -Werror "$SRC/examples/read_page.c" $cflags $libs -o "$TMP/read_page_pc" || fail "cc with pkg-config --libs"
run_example pc-shared "$TMP/read_page_pc" LD_LIBRARY_PATH="$L"
# Static: libckjit.a for -lckjit, then the private libraries (--as-needed drops the .so that
# `pkg-config --static` names again).
"$CC" -std=c99 -Wall -Werror "$SRC/examples/read_page.c" $cflags -L"$L" -Wl,-Bstatic -lckjit -Wl,-Bdynamic \
  -Wl,--as-needed $static_libs -o "$TMP/read_page_pc_static" || fail "cc with pkg-config --static --libs"
no_libckjit_needed "$TMP/read_page_pc_static"
run_example pc-static "$TMP/read_page_pc_static"
echo "install test: ok"
