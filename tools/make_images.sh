#!/usr/bin/env bash
# Rebuilds tools/make_images.cpp and regenerates assets/sample-page.png and
# tests/fixtures/vision/images/*. Needs g++, Debian's libstb-dev and fonts-dejavu-core.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(mktemp -d)/make_images"
trap 'rm -rf "$(dirname "$bin")"' EXIT
# libstb ships the stb implementations precompiled, so the generator only includes the
# headers and links the library (defining *_IMPLEMENTATION too would duplicate symbols).
g++ -O2 -std=c++17 -Wall -Wextra "$root/tools/make_images.cpp" -o "$bin" \
    $(pkg-config --cflags --libs stb) -lm
mkdir -p "$root/assets" "$root/tests/fixtures/vision/images"
cd "$root" && "$bin" .
