#!/usr/bin/env bash
# The GPU evidence for a tree: build, the whole test suite through ctest, compute-sanitizer
# (memcheck, racecheck, synccheck) over the GPU tests, `ppat check`, and `ppat bench --quick`.
#
# Run on the H200 through the device tool, from the repository root:
#   scripts/device-check.sh            (writes $OUT/device-check.txt and its logs)
# The report's first line is "tree <hash>" of the sources it checked; its closing lines
# give "N passed, M failed" for the tests and the error count of each sanitizer tool.
#
# The sanitizers run the representative subset: every GPU test except the *huge* ones
# (more than 2^28 items), the *cuda_failure* ones (which provoke a CUDA API error on
# purpose) and those that run in child processes of their own (host threads and streams
# racing, which instrumented kernels, run one at a time, cannot show; pointers rejected
# before any launch), with cases above PPAT_TEST_MAX_ITEMS items skipped inside the tests,
# since instrumented kernels run ten to a hundred times slower.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/build/device-check}
mkdir -p "$out"
report=$out/device-check.txt
build=build/release
sanitizer_max_items=300000
sanitizer_filter='-*huge*:*cuda_failure*:pointers.host*:pointers.freed*:streams.per_thread*:streams.destroyed*:default_stream_per_thread.*'

tree_hash() {
  find CMakeLists.txt include src tests bench -type f \
    \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name 'CMakeLists.txt' \) |
    LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -c1-16
}

echo "tree $(tree_hash)" >"$report"
say() { echo "$@" | tee -a "$report"; }
section() { say ""; say "== $* =="; }

section "build ($(date -u +%FT%TZ))"
if ! { cmake --preset release && cmake --build --preset release -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  say "build FAILED; the end of build.log:"
  tail -n 40 "$out/build.log" | tee -a "$report"
  exit 1
fi
say "built $(grep -c 'Building' "$out/build.log") objects, warnings: $(grep -ci 'warning' "$out/build.log")"

section "ppat info"
"$build/src/ppat" info 2>&1 | tee -a "$report"

section "tests (ctest)"
ctest --test-dir "$build" -j 6 --output-on-failure >"$out/ctest.log" 2>&1
grep -E "Test +#|tests passed|Skipped|Failed|\*\*\*" "$out/ctest.log" | tee -a "$report" >/dev/null
# "100% tests passed out of 41" or "95% tests passed, 2 tests failed out of 41"
total=$(grep -Eo "tests? (passed|failed) out of [0-9]+" "$out/ctest.log" | grep -Eo "[0-9]+$" || echo 0)
failed=$(grep -Eo "[0-9]+ tests? failed out of" "$out/ctest.log" | grep -Eo "^[0-9]+" || echo 0)
[ "$total" -gt 0 ] || failed=1  # no summary at all: ctest itself failed
skipped=$(grep -c "(Skipped)" "$out/ctest.log" || true)
passed=$((total - failed - skipped))
say "ctest: $passed passed, $failed failed, $skipped skipped of $total"

section "compute-sanitizer (PPAT_TEST_MAX_ITEMS=$sanitizer_max_items, huge tests filtered)"
: >"$out/sanitizer.log"
declare -A tool_errors
sanitized_failures=0
# The suites with tests left to run under the filter (a suite with none makes no CUDA call,
# and the tools then print no summary).
suites=$(cd "$build/tests" && for suite in $(ls test_* | grep -v '\.' | LC_ALL=C sort); do
  ./"$suite" --gtest_filter="$sanitizer_filter" --gtest_list_tests | grep -q '^  ' && echo "$suite"
done)
for tool in memcheck racecheck synccheck; do
  # The suites side by side, one process each: the GPU is shared, the CPU time is not.
  for suite in $suites; do
    PPAT_TEST_MAX_ITEMS=$sanitizer_max_items compute-sanitizer --tool "$tool" --print-limit 20 \
      "$build/tests/$suite" --gtest_filter="$sanitizer_filter" >"$out/$tool-$suite.log" 2>&1 &
  done
  wait
  errors=0
  for suite in $suites; do
    log=$out/$tool-$suite.log
    if [ "$tool" = racecheck ]; then
      found=$(grep -Eo "\(([0-9]+) errors" "$log" | grep -Eo "[0-9]+" | awk '{s += $1} END {print s}')
    else
      found=$(grep -Eo "ERROR SUMMARY: [0-9]+" "$log" | grep -Eo "[0-9]+" | awk '{s += $1} END {print s}')
    fi
    gtest_failed=$(grep -c "^\[  FAILED  \]" "$log" || true)
    if [ -z "$found" ]; then
      found=1  # no summary line: the tool itself failed, which counts as an error
      say "  $tool $suite: no summary line (see sanitizer.log)"
    fi
    errors=$((errors + found))
    sanitized_failures=$((sanitized_failures + gtest_failed))
    say "  $tool $suite: $found errors, $(grep -Eo "\[  PASSED  \] [0-9]+" "$log" | grep -Eo "[0-9]+$" || echo 0) tests passed, $gtest_failed failed lines"
    { echo "##### $tool $suite"; cat "$log"; } >>"$out/sanitizer.log"
    rm -f "$log"
  done
  tool_errors[$tool]=$errors
done

section "ppat check"
"$build/src/ppat" check 2>&1 | tee -a "$report"
check_status=${PIPESTATUS[0]}

section "ppat bench --quick"
"$build/src/ppat" bench --quick --json "$out/bench-quick.json" 2>&1 | tee -a "$report"
bench_status=${PIPESTATUS[0]}

section "summary"
say "tests: $passed passed, $failed failed"
say "sanitizer memcheck: ${tool_errors[memcheck]} errors"
say "sanitizer racecheck: ${tool_errors[racecheck]} errors"
say "sanitizer synccheck: ${tool_errors[synccheck]} errors"
say "tests failed under the sanitizers: $sanitized_failures"
say "ppat check exit status: $check_status"
say "bench --quick exit status: $bench_status"
