#!/usr/bin/env bash
# The GPU evidence for a tree: build, the whole test suite through ctest, compute-sanitizer
# (memcheck, racecheck, synccheck) over the GPU tests, `ppat check`, `ppat bench --quick`,
# and the Python package's tests and benchmark (scripts/python-check.sh).
#
# Run on the H200 through the device tool, from the repository root:
#   scripts/device-check.sh [part...]   (writes $OUT/device-check.txt and its logs)
# The parts, all by default and always in this order: build tests sanitizers check bench
# python; and, asked for by name, distributed: `ppat bench --pattern distributed` on every
# visible GPU (the issue's targets beside the all-to-all bandwidth of the same run) and,
# with two GPUs or more and mpirun, the one-process-per-GPU example on two ranks. On a
# two-GPU machine the tests part runs the two-rank tests too:
#   scripts/device-check.sh build tests distributed
# One device call allows ten minutes and the whole check takes about twenty-five on an
# H200 (tree bf75e2147d34082d, 2026-12-04: build 447 s on a fresh machine, tests 136 s,
# sanitizers not done in the 460 s left after the tests (340 s alone on earlier trees), check
# and bench 28 s; python 270 s before), so it takes calls one after another on one warm
# machine, which keeps the build between them (the idle machine is given back after 30 s).
# With the largest test suites compiled from several files, build, tests, check and bench
# took 446 s in one call on a fresh H100 (tree cc640cbf945c8a39, 2026-12-05: build 247 s,
# tests 173 s), but the next fresh H100 took 468 s to build alone (tree 5a33e20040fa1bd8,
# the same day) and the call ran out with the tests half done. A fresh machine's build
# time varies that much, so the first call builds alone (a command with no pipe, which the
# limit would kill with its output; the logs are under $OUT either way). On a fresh H200
# (tree 4ea8cb4e07946cfe, 2026-12-05) build took 411 s, tests, check and bench 211 s, and
# the three sanitizer tools side by side ran past a 590-s call with no report, so each tool
# is a part of its own too (`sanitizers` is all three), and every sanitized suite stops at
# PPAT_SANITIZER_SECONDS (520 by default), reported as timed out, so that a call always
# ends with a report:
#   scripts/device-check.sh build
#   scripts/device-check.sh tests check bench
#   scripts/device-check.sh memcheck
#   scripts/device-check.sh racecheck synccheck
#   scripts/device-check.sh python
# The report's first line is "tree <hash>" of the sources it checked; its closing lines
# give "N passed, M failed" for the tests and the error count of each sanitizer tool, and
# every section names the seconds it took.
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
sanitizer_seconds=${PPAT_SANITIZER_SECONDS:-520}
sanitizer_filter='-*huge*:*cuda_failure*:*one_process_per_gpu*:pointers.host*:pointers.freed*:streams.per_thread*:streams.destroyed*:default_stream_per_thread.*'

tree_hash() {
  find CMakeLists.txt include src tests bench -type f \
    \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name 'CMakeLists.txt' \) |
    LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -c1-16
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(build tests sanitizers check bench python)
for part in "${parts[@]}"; do
  case "$part" in
    build | tests | sanitizers | memcheck | racecheck | synccheck | check | bench | python | distributed) ;;
    *) echo "device-check: unknown part '$part' (build tests sanitizers memcheck racecheck synccheck check bench python distributed)" >&2; exit 2 ;;
  esac
done
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }
sanitizer_tools=()
for tool in memcheck racecheck synccheck; do
  if wants sanitizers || wants "$tool"; then sanitizer_tools+=("$tool"); fi
done

echo "tree $(tree_hash)" >"$report"
say() { echo "$@" | tee -a "$report"; }
section_start=
section() {
  [ -z "$section_start" ] || say "($((SECONDS - section_start)) s)"
  section_start=$SECONDS
  say ""
  say "== $* =="
}
summary=()

if wants build; then
  section "build ($(date -u +%FT%TZ))"
  if ! { cmake --preset release && cmake --build --preset release -j "$(nproc)"; } >"$out/build.log" 2>&1; then
    say "build FAILED; the end of build.log:"
    tail -n 40 "$out/build.log" | tee -a "$report"
    exit 1
  fi
  say "built $(grep -c 'Building' "$out/build.log") objects, warnings: $(grep -ci 'warning' "$out/build.log")"
  # The build's critical path is its slowest objects (ninja's log: each target's last start
  # and end, in ms).
  say "the slowest objects:"
  awk -F'\t' 'NR > 1 {t[$4] = ($2 - $1) / 1000} END {for (o in t) printf "  %4.0f s %s\n", t[o], o}' \
    "$build/.ninja_log" | sort -rn | head -n 8 | tee -a "$report"

  section "ppat info"
  "$build/src/ppat" info 2>&1 | tee -a "$report"
fi

if wants tests; then
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
  summary+=("tests: $passed passed, $failed failed")
fi

if [ ${#sanitizer_tools[@]} -gt 0 ]; then
  section "compute-sanitizer ${sanitizer_tools[*]} (PPAT_TEST_MAX_ITEMS=$sanitizer_max_items, huge tests filtered, $sanitizer_seconds s a suite at most)"
  : >"$out/sanitizer.log"
  sanitized_failures=0
  # The suites with tests left to run under the filter (a suite with none makes no CUDA call,
  # and the tools then print no summary).
  suites=$(cd "$build/tests" && for suite in $(ls test_* | grep -v '\.' | LC_ALL=C sort); do
    ./"$suite" --gtest_filter="$sanitizer_filter" --gtest_list_tests | grep -q '^  ' && echo "$suite"
  done)
  # Every tool on every suite side by side, one process each: the GPU is shared, the CPU
  # time is not, and the slowest suite then sets the time once rather than once a tool.
  # NCCL's communicator set-up asks cudaFuncGetAttributes about kernels it holds no image of
  # for this GPU (error 209), and memcheck counts each as an error: 156 in the distributed
  # suite on the H200 with NCCL 2.28.3, all API errors (none are left without their reports;
  # every one printed is inside ncclCommInitAll). That suite is checked without API error
  # reports: memory accesses stay checked, and the tests check every CUDA call of their own
  # and of ppat.
  # A suite still running at $sanitizer_seconds s is stopped and reported as timed out, an
  # error: the errors its log shows so far are counted too.
  for tool in "${sanitizer_tools[@]}"; do
    for suite in $suites; do
      api_errors=()
      [ "$suite" != test_distributed ] || api_errors=(--report-api-errors no)
      {
        PPAT_TEST_MAX_ITEMS=$sanitizer_max_items timeout --kill-after=10 "$sanitizer_seconds" \
          compute-sanitizer --tool "$tool" --print-limit 20 "${api_errors[@]}" \
          "$build/tests/$suite" --gtest_filter="$sanitizer_filter"
        case $? in 124 | 137) echo "ppat device-check: timed out after $sanitizer_seconds s" ;; esac
      } >"$out/$tool-$suite.log" 2>&1 &
    done
  done
  wait
  for tool in "${sanitizer_tools[@]}"; do
    errors=0
    for suite in $suites; do
      log=$out/$tool-$suite.log
      if [ "$tool" = racecheck ]; then
        found=$(grep -Eo "\(([0-9]+) errors" "$log" | grep -Eo "[0-9]+" | awk '{s += $1} END {print s}')
      else
        found=$(grep -Eo "ERROR SUMMARY: [0-9]+" "$log" | grep -Eo "[0-9]+" | awk '{s += $1} END {print s}')
      fi
      gtest_failed=$(grep -c "^\[  FAILED  \]" "$log" || true)
      if grep -q "^ppat device-check: timed out" "$log"; then
        found=$((${found:-0} + 1))  # unfinished: an error, beside those its log shows so far
        say "  $tool $suite: timed out after $sanitizer_seconds s (its log so far in sanitizer.log)"
      elif [ -z "$found" ]; then
        found=1  # no summary line: the tool itself failed, which counts as an error
        say "  $tool $suite: no summary line (see sanitizer.log)"
      fi
      errors=$((errors + found))
      sanitized_failures=$((sanitized_failures + gtest_failed))
      say "  $tool $suite: $found errors, $(grep -Eo "\[  PASSED  \] [0-9]+" "$log" | grep -Eo "[0-9]+$" || echo 0) tests passed, $gtest_failed failed lines"
      { echo "##### $tool $suite"; cat "$log"; } >>"$out/sanitizer.log"
      rm -f "$log"
    done
    summary+=("sanitizer $tool: $errors errors")
  done
  summary+=("tests failed under the sanitizers: $sanitized_failures")
fi

if wants check; then
  section "ppat check"
  "$build/src/ppat" check 2>&1 | tee -a "$report"
  summary+=("ppat check exit status: ${PIPESTATUS[0]}")
fi

if wants bench; then
  section "ppat bench --quick"
  "$build/src/ppat" bench --quick --json "$out/bench-quick.json" 2>&1 | tee -a "$report"
  summary+=("bench --quick exit status: ${PIPESTATUS[0]}")
fi

if wants python; then
  section "python (scripts/python-check.sh)"
  OUT=$out scripts/python-check.sh 2>&1 | tee -a "$report"
  summary+=("python check exit status: ${PIPESTATUS[0]}")
fi

if wants distributed; then
  section "ppat bench --pattern distributed"
  "$build/src/ppat" bench --pattern distributed 2>&1 | tee -a "$report"
  summary+=("bench --pattern distributed exit status: ${PIPESTATUS[0]}")
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null; then
    section "mpirun -np 2 sort_one_process_per_gpu (2^28 keys a rank)"
    id_file=$(mktemp -u /tmp/ppat-nccl-id.XXXXXX)  # a path that does not exist yet
    as_root=()
    [ "$(id -u)" != 0 ] || as_root=(--allow-run-as-root)
    mpirun "${as_root[@]}" -np 2 "$build/examples/sort_one_process_per_gpu" "$id_file" 28 2>&1 |
      tee -a "$report"
    summary+=("mpirun -np 2 sort_one_process_per_gpu exit status: ${PIPESTATUS[0]}")
    rm -f "$id_file"
  else
    say "one process a GPU: skipped ($gpus GPUs, mpirun $(command -v mpirun >/dev/null && echo found || echo missing))"
  fi
fi

section "summary"
for line in "${summary[@]}"; do
  say "$line"
done
