#!/usr/bin/env bash
# The Python package's evidence: build it with pip (scikit-build-core and nanobind as
# installed: nothing is downloaded), run its tests, and run python/bench.py.
#
#   scripts/python-check.sh [--no-bench]     (writes $OUT/python-check.txt and its logs)
#
# scripts/device-check.sh runs it last. Where nanobind or scikit-build-core is missing it
# says so and stops, successfully: the C++ library does not need them.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/build/python-check}
mkdir -p "$out"
report=$out/python-check.txt
: >"$report"
say() { echo "$@" | tee -a "$report"; }

python=${PYTHON:-python3}
if ! "$python" -c "import nanobind, scikit_build_core" 2>/dev/null; then
  say "python: nanobind or scikit-build-core not found for $python: the package is not built"
  exit 0
fi

# Installed into a folder of the build, not into the interpreter's site-packages.
site=$PWD/build/python-site
rm -rf "$site"
start=$(date +%s)
if ! "$python" -m pip install --no-build-isolation --no-deps --no-index -v --target "$site" \
  ./python >"$out/python-build.log" 2>&1; then
  say "python build FAILED; the end of python-build.log:"
  tail -n 40 "$out/python-build.log" | tee -a "$report"
  exit 1
fi
say "python build: $(($(date +%s) - start)) s, warnings: $(grep -ci 'warning' "$out/python-build.log")"

PYTHONPATH=$site "$python" -m pytest -q -p no:cacheprovider python/tests >"$out/pytest.log" 2>&1
pytest_status=$?
say "pytest: $(tail -n 1 "$out/pytest.log")"
grep -E "^(FAILED|ERROR)" "$out/pytest.log" | head -n 40 | tee -a "$report"

if [ "${1:-}" != "--no-bench" ]; then
  PYTHONPATH=$site "$python" python/bench.py --out "$out" 2>&1 | tee -a "$report"
fi
exit "$pytest_status"
