#!/usr/bin/env bash
# Many pages at once: `ckjit ocr --parallel N` against one page at a time (--parallel 1) on the same
# N square pages (perf/make_page: the sample page at N sizes from 1024 down, so every page is its
# own image), each generating --tokens tokens (--ignore-eos: random weights stop anywhere).
# Alternated fresh runs, wall time per run, the machine and load average printed.
#   perf/ocr_parallel.sh [--pages 8] [--tokens 512] [--threads 2] [--rounds 1] [-- EXTRA ckjit ocr FLAGS]
# Model: $CKJIT_MODEL / $CKJIT_MMPROJ, default ~/.cache/ckjit/default-2b (bash tools/dev.sh run makes it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
PAGES=8 TOKENS=512 THREADS=2 ROUNDS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --pages) PAGES="$2"; shift 2 ;;
    --tokens) TOKENS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--pages 8] [--tokens 512] [--threads 2] [--rounds 1] [-- EXTRA ckjit ocr FLAGS]" >&2; exit 2 ;;
  esac
done
EXTRA=("$@")
MODEL="${CKJIT_MODEL:-$HOME/.cache/ckjit/default-2b/2b-Q4_K_M.gguf}"
MMPROJ="${CKJIT_MMPROJ:-$HOME/.cache/ckjit/default-2b/mmproj-2b-f16.gguf}"
[ -f "$MODEL" ] && [ -f "$MMPROJ" ] || { echo "ocr_parallel: no model pair ($MODEL, $MMPROJ): run bash tools/dev.sh run first" >&2; exit 1; }
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/pages"
for i in $(seq 0 $((PAGES - 1))); do "$BUILD/perf/make_page" "$TMP/pages/page-$i.png" $((1024 - 32 * i)) >/dev/null; done
echo "machine: $("$BUILD/tools/ckjit" info 2>/dev/null | head -n 1)"
echo "pages: $PAGES (sides 1024 .. $((1024 - 32 * (PAGES - 1)))), $TOKENS tokens each, threads $THREADS, rounds $ROUNDS, extra flags: ${EXTRA[*]:-none}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A times
for r in $(seq 1 "$ROUNDS"); do
  for np in 1 "$PAGES"; do
    rm -f "$TMP/out.jsonl"
    t0=$(date +%s.%N)
    "$BUILD/tools/ckjit" ocr -m "$MODEL" --mmproj "$MMPROJ" -t "$THREADS" -n "$TOKENS" --ignore-eos --parallel "$np" \
      -o "$TMP/out.jsonl" "${EXTRA[@]}" "$TMP/pages" >"$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
    t1=$(date +%s.%N)
    s=$(echo "$t1 - $t0" | bc)
    times[$np]="${times[$np]:-} $s"
    echo "round $r, --parallel $np: $s s ($(grep -c '"text"' "$TMP/out.jsonl") pages); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m1=$(med "${times[1]}") mn=$(med "${times[$PAGES]}")
echo "median: one page at a time $m1 s, --parallel $PAGES $mn s = $(echo "scale=2; $mn / $m1" | bc)x the time"
