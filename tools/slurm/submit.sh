#!/usr/bin/env bash
# Queues `ckjit ocr` over a document set as a Slurm job array of N shards plus the merge step,
# which runs when every task has ended (afterany: a task with failed pages still has its records).
#   tools/slurm/submit.sh N OUT_DIR -m M.gguf --mmproj P.gguf INPUT...
# Result: OUT_DIR/all.jsonl. Give absolute paths (or run from the same folder): a page's source
# path is its identity for sharding, resume and merge. CKJIT names the binary (default: ckjit);
# SBATCH_ARGS adds sbatch options to both jobs (e.g. "--partition=cpu --cpus-per-task=16").
set -euo pipefail
if [ $# -lt 3 ]; then echo "usage: $0 N OUT_DIR [ckjit ocr flags] INPUT..." >&2; exit 2; fi
n="$1" out="$(realpath -m "$2")"; shift 2
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "submit: N must be a positive number of shards, not '$n'" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
# shellcheck disable=SC2086  # SBATCH_ARGS is a list of options
jid=$(OCR_OUT_DIR="$out" sbatch --parsable ${SBATCH_ARGS:-} --array="0-$((n - 1))" --output="$out/task-%A_%a.log" \
  --export=ALL "$here/ocr_array.sbatch" "$@")
jid="${jid%%;*}"
# shellcheck disable=SC2086
mid=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterany:$jid" --job-name=ckjit-ocr-merge --output="$out/merge-%j.log" \
  --export=ALL --wrap "bash '$here/ocr_merge.sh' '$out' $n '$out/all.jsonl'")
echo "array job $jid ($n tasks), merge job $mid -> $out/all.jsonl"
