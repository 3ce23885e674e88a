#!/usr/bin/env bash
# The merge step of tools/slurm/ocr_array.sbatch: joins DIR/shard-0-of-N.jsonl .. shard-(N-1) into
# OUT, one record per page sorted by source and page (`ckjit ocr --merge`). Every shard must be
# there; a missing one is named and nothing is written.
#   tools/slurm/ocr_merge.sh DIR N OUT
set -euo pipefail
if [ $# -ne 3 ]; then echo "usage: $0 DIR N OUT" >&2; exit 2; fi
dir="$1" n="$2" out="$3"
CKJIT="${CKJIT:-ckjit}"
files=() missing=()
for ((i = 0; i < n; i++)); do
  f="$dir/shard-$i-of-$n.jsonl"
  if [ -f "$f" ]; then files+=("$f"); else missing+=("$f"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ocr_merge: missing shard journals (task not run or failed to start): ${missing[*]}" >&2
  exit 1
fi
exec "$CKJIT" ocr --merge -o "$out" "${files[@]}"
