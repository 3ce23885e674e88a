#!/usr/bin/env bash
# Every doctest case name can be one ctest entry that runs exactly that case: no ';' (CMake splits
# the list there) and no ',' (doctest's filters split there, and the entry loses its labels), and
# a filter that matches no case fails instead of passing having run nothing (tests/main.cpp).
#   check_case_names.sh TEST_BINARY...
set -uo pipefail
status=0
for bin in "$@"; do
  bad="$("$bin" --list-test-cases --no-version 2>&1 | grep -v '^\[doctest\]' | grep -v '^=*$' | grep -E '[;,]')"
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
[ $status = 0 ] && echo "every case name is one ctest entry, and an empty filter fails"
exit $status
