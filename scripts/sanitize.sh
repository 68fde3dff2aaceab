#!/usr/bin/env bash
# The sanitizer job, run by CI after `make test`:
#   1. one clang build with AddressSanitizer and UndefinedBehaviorSanitizer everywhere
#      (-DPODSIM_FUZZ=ON; -fno-sanitize-recover=all, so that any report stops the program
#      and fails), of only what this job runs: the fuzz targets and the unit test binaries;
#   2. every fuzz target under libFuzzer for PODSIM_FUZZ_SECONDS (default 60) on a copy of
#      its seed corpus (the committed seeds stay as they are); a finding fails the job and
#      leaves its reproducer under BUILD/fuzz-runs/<target>/, whose path is printed;
#   3. the unit-labelled tests of that build (ctest -L unit), except those that run the
#      SystemC timing model: they run from a second, UBSan-only build (BUILD/ubsan), because
#      ASan cannot follow SystemC's coroutine switches (see below).
#
#   scripts/sanitize.sh [BUILD_DIR]      (default build-sanitize)
#
# Environment: PODSIM_FUZZ_SECONDS (per target), JOBS (parallel compiles, fuzzers and
# tests; default nproc). Needs clang, libFuzzer and the sanitizer runtimes, and
# llvm-symbolizer for line numbers in reports (README: the sanitizer job's packages).
#
# One build serves both the fuzzers and the tests: -DPODSIM_FUZZ=ON compiles every
# library and test with libFuzzer's coverage instrumentation (fuzzer-no-link); a test
# binary, which does not link libFuzzer, gets the coverage callbacks from the sanitizer
# runtime's no-op defaults, so the instrumentation costs it only some speed.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-sanitize}
stage() { echo "== sanitize [$((SECONDS / 60))m$((SECONDS % 60))s]: $*"; }
fuzz_seconds=${PODSIM_FUZZ_SECONDS:-60}
jobs=${JOBS:-$(nproc)}

# Symbolized stacks (file:line) in every report; fatal on the first one.
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
if [ -n "$symbolizer" ]; then export ASAN_SYMBOLIZER_PATH=$symbolizer; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:report_error_type=1}

stage "configure $build (clang, ASan + UBSan, libFuzzer)"
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS=-fno-sanitize-recover=all -DCMAKE_CXX_FLAGS=-fno-sanitize-recover=all \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPODSIM_FUZZ=ON -DPODSIM_BUILD_BENCH=OFF \
  -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null

# The fuzz targets (bin/fuzz/targets.txt: name, tab, seed corpus) and the unit test
# binaries (tests/<dir>/*_test.cc, neither *_integration_test nor *_slow_test) of the
# folders below: the parts that read what users hand podsim (HLO text, safetensors, chip
# TOML, executables, assembler text, profiles) and the models that run it.
# compiler/{passes,cpu,tpu} and runtime/ are left out for time: their ~50 binaries and the
# runtime library would more than double this job's build on 2 cores.
asan_dirs=(compiler/ir compiler/opencl topology isa sim/functional sim/pod traces)
# Tests that run the SystemC timing model get UBSan only. Debian's SystemC 2.3.4 tells ASan
# about its coroutine switches only in part: a switch back to the main coroutine announces
# an empty stack, and the switch away from a process that ends (sc_cor_pkg_qt::abort) is
# not announced at all. ASan then misplaces the current stack, skips the clean-up it does
# when an exception unwinds frames ("ASan is ignoring requested __asan_handle_no_return"),
# and the unwound frames' redzones stay poisoned: a later frame over them reads as a
# stack-buffer-overflow that is not one (hazard_checker_test, in ~PipelinedDmaEngine, with
# GCC's ASan). No ASAN_OPTIONS fixes the bookkeeping, so these get UBSan alone.
ubsan_dirs=(sim/timing)
test_targets() {
  local dir source name
  for dir in "$@"; do
    for source in tests/"$dir"/*_test.cc; do
      name=$(basename "$source" .cc)
      [[ $name == *_integration_test || $name == *_slow_test ]] || echo "$name"
    done
  done
}
mapfile -t fuzz_lines <"$build/bin/fuzz/targets.txt"
fuzz_targets=()
for line in "${fuzz_lines[@]}"; do fuzz_targets+=("${line%%$'\t'*}"); done
mapfile -t asan_tests < <(test_targets "${asan_dirs[@]}")
mapfile -t ubsan_tests < <(test_targets "${ubsan_dirs[@]}")

stage "build ${#fuzz_targets[@]} fuzz targets and ${#asan_tests[@]} unit test binaries (ASan + UBSan)"
cmake --build "$build" -j "$jobs" --target "${fuzz_targets[@]}" "${asan_tests[@]}"
stage "configure and build $build/ubsan: ${#ubsan_tests[@]} unit test binaries (UBSan)"
cmake -S . -B "$build/ubsan" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  "-DCMAKE_CXX_FLAGS=-fsanitize=undefined -fno-sanitize-recover=all" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=undefined \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPODSIM_BUILD_BENCH=OFF \
  -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
cmake --build "$build/ubsan" -j "$jobs" --target "${ubsan_tests[@]}"

stage "fuzz, ${fuzz_seconds} s per target"
runs="$build/fuzz-runs"
rm -rf "$runs"
fuzz_one() {
  local name=$1 corpus=$2 dir="$runs/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -R "$corpus/." "$dir/corpus/"
  # -timeout: an input that runs this long is a hang, reported like a crash.
  if "$build/bin/fuzz/$name" -max_total_time="$fuzz_seconds" -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1; then
    echo "$name: $(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log") runs, no finding"
    return
  fi
  touch "$dir/FAILED"
  {
    echo "error: $name found a bug; the end of its log ($dir/log):"
    tail -n 60 "$dir/log"
    for artifact in "$dir/artifacts/"*; do
      [ -e "$artifact" ] && echo "error: $name reproducer: $artifact (replay: $build/bin/fuzz/$name $artifact)"
    done
  } >&2
}
for line in "${fuzz_lines[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "${line%%$'\t'*}" "${line#*$'\t'}" &
done
wait
fuzz_failed=0
if compgen -G "$runs/*/FAILED" >/dev/null; then fuzz_failed=1; fi

stage "unit tests"
# Exactly the binaries built above: another one left in the build tree (a timing test
# built by hand) would otherwise run under ASan too.
for bin in "$build"/bin/tests/*; do
  [[ " ${asan_tests[*]} " == *" $(basename "$bin") "* ]] || rm -f "$bin"
done
# Only the binaries built above have labelled tests (gtest lists the others as unlabelled
# *_NOT_BUILT entries); the fuzz targets' smoke tests are left out: the runs above fuzz
# them for longer.
test_failed=0
for dir in "$build" "$build/ubsan"; do
  ctest --test-dir "$dir" -L unit -E '_smoke$' --output-on-failure --no-tests=error \
    --timeout 900 -j "$jobs" || test_failed=1
done

# What this job compiled with and ran must come from setup.sh's lists too (its sanitize
# and test groups included).
deps_failed=0
for dir in "$build" "$build/ubsan"; do
  /usr/bin/python3 scripts/check_deps.py --build-dir "$dir" --group sanitize --group test || deps_failed=1
done

if [ "$fuzz_failed" -ne 0 ] || [ "$test_failed" -ne 0 ] || [ "$deps_failed" -ne 0 ]; then
  echo "sanitize: FAILED (fuzzing: $([ $fuzz_failed -eq 0 ] && echo ok || echo finding)," \
    "unit tests: $([ $test_failed -eq 0 ] && echo ok || echo failures)," \
    "dependencies: $([ $deps_failed -eq 0 ] && echo ok || echo missing))" >&2
  exit 1
fi
echo "sanitize: ${#fuzz_targets[@]} fuzz targets without findings;" \
  "${#asan_tests[@]} + ${#ubsan_tests[@]} unit test binaries clean"
