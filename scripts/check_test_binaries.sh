#!/usr/bin/env bash
# Fails if any test binary lists zero tests: a binary whose main() came from a library
# (SystemC ships one) would run nothing and still exit 0.
set -euo pipefail
build=${1:-build}
status=0
count=0
for bin in "$build"/bin/tests/*; do
  [ -x "$bin" ] || continue
  count=$((count + 1))
  n=$("$bin" --gtest_list_tests | grep -c '^  ' || true)
  if [ "$n" -eq 0 ]; then
    echo "error: $bin lists zero tests" >&2
    status=1
  fi
done
if [ "$count" -eq 0 ]; then
  echo "error: no test binaries under $build/bin/tests" >&2
  exit 1
fi
echo "check_test_binaries: $count test binaries, each with tests"
exit $status
