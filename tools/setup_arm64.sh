#!/usr/bin/env bash
# The AArch64 cross build's packages on Debian 12 (x86 host): the cross compiler, qemu-user, and the
# :arm64 libraries through multiarch. libcpuinfo-dev:arm64 cannot be co-installed with the amd64 one
# (they share a CMake file), so its arm64 files are unpacked into .deps/arm64-sysroot (git-ignored),
# which cmake/aarch64.cmake reads. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
PKGS=(g++-aarch64-linux-gnu qemu-user libasmjit-dev:arm64 libhwloc-dev:arm64 libboost-program-options-dev:arm64
      libstb-dev:arm64 libtiff-dev:arm64 libwebp-dev:arm64
      libjpeg62-turbo-dev:arm64 libpng-dev:arm64 libgif-dev:arm64)
missing=()
for p in "${PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "setup_arm64: installing ${missing[*]}" >&2
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
SYSROOT="$ROOT/.deps/arm64-sysroot"
if [ ! -f "$SYSROOT/usr/lib/aarch64-linux-gnu/libcpuinfo.so" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download libcpuinfo-dev:arm64 libcpuinfo0:arm64 >/dev/null)
  mkdir -p "$SYSROOT"
  for d in "$tmp"/*.deb; do dpkg -x "$d" "$SYSROOT"; done
  rm -rf "$tmp"
fi
