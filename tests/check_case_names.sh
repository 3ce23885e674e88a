#!/usr/bin/env bash
# Every doctest case name can be one ctest entry that runs exactly that case: no ';' (CMake splits
# the list there) and no ',' (doctest's filters split there, and the entry loses its labels), and
# a filter that matches no case fails instead of passing having run nothing (tests/main.cpp).
# With CTEST_DIR set (a build folder): every ctest entry there has a label (the builds of
# tools/dev.sh choose their tests by label).
#   [CTEST_DIR=BUILD] check_case_names.sh TEST_BINARY...
set -uo pipefail
status=0
for bin in "$@"; do
  cases="$("$bin" --list-test-cases --no-version 2>&1)" || { echo "$bin: cannot list its cases" >&2; status=1; continue; }
  if ! grep -q 'test cases' <<<"$cases" || [ "$(grep -v '^\[doctest\]' <<<"$cases" | grep -vc '^=*$')" -lt 1 ]; then
    echo "$bin: lists no case" >&2
    status=1
  fi
  bad="$(grep -v '^\[doctest\]' <<<"$cases" | grep -v '^=*$' | grep -E '[;,]')"
  if [ -n "$bad" ]; then
    echo "$(basename "$bin"): case names with ';' or ',' (write 'and', '/' or '-'):" >&2
    echo "$bad" >&2
    status=1
  fi
  if "$bin" "--test-case=no case is named this" >/dev/null 2>&1; then
    echo "$(basename "$bin"): a filter that matches no case passed" >&2
    status=1
  fi
done
if [ -n "${CTEST_DIR:-}" ]; then
  if ! unlabelled="$(cd "$CTEST_DIR" && ctest --show-only=json-v1 | python3 -c '
import json, sys
tests = json.load(sys.stdin)["tests"]
assert tests, "no ctest entries"
for t in tests:
    if not any(p["name"] == "LABELS" and p["value"] for p in t.get("properties", [])):
        print(t["name"])')"; then
    echo "cannot list the ctest entries of $CTEST_DIR" >&2
    status=1
  elif [ -n "$unlabelled" ]; then
    echo "ctest entries without a label (put the case in a TEST_SUITE):" >&2
    echo "$unlabelled" >&2
    status=1
  fi
fi
[ $status = 0 ] && echo "every case name is one ctest entry, and an empty filter fails"
exit $status
