#!/usr/bin/env bash
# Native tests: the GoogleTest suite, plain and under ASan+UBSan, through ctest.
# CUDA code is compiled (when nvcc exists) in the plain build so it can't rot; GPU tests
# skip themselves without a GPU. VRAMLAB_TEST_BUILD names an already-configured build tree
# (npm test reuses cmake-js's build/ so the CUDA sources compile once).
# Steps (arguments; none = all three, in order): plain, sanitized-build, sanitized.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
gen=$(command -v ninja >/dev/null && echo "-G Ninja" || echo "")
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(plain sanitized-build sanitized)
[ "${VRAMLAB_SKIP_SANITIZE:-0}" != 1 ] || steps=(plain)

# A fresh tree (CI's) has no ctest cost data, so ctest would start the tests in file order
# and a long one could start last, with one core idle; seeding it with the longest tests'
# times (scripts/ctest-costs, taken from a full run) starts them first. ctest keeps the
# file up to date after each run; names it no longer has are ignored.
seed_costs() {
  local f=$1/Testing/Temporary/CTestCostData.txt
  [ -f "$f" ] || { mkdir -p "$(dirname "$f")" && cp "scripts/ctest-costs/$2.txt" "$f"; }
}

plain_tests() {
  local plain=${VRAMLAB_TEST_BUILD:-build-tests}
  if [ -z "${VRAMLAB_TEST_BUILD:-}" ]; then
    cmake -S . -B "$plain" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVRAMLAB_TESTS=ON -DVRAMLAB_ADDON=OFF >/dev/null
    cmake --build "$plain" -j "$jobs"
  fi
  seed_costs "$plain" plain
  ctest --test-dir "$plain" --output-on-failure -j "$jobs"
}

# Debug keeps the asserts (VRAMLAB_DEBUG_ASSERT, assert) on. No CUDA (nvcc takes no
# -fsanitize), no addon, and only the test executable (with vramlab_dist, which its tests
# launch): the benchmarks are compiled in the plain tree already. Not -O1: it takes 1.6-1.8x
# the compile CPU per file, more than the whole sanitized test run it could shorten.
sanitized_build() {
  cmake -S . -B build-asan $gen -DCMAKE_BUILD_TYPE=Debug -DVRAMLAB_TESTS=ON \
    -DVRAMLAB_ADDON=OFF -DVRAMLAB_CUDA=OFF -DVRAMLAB_SANITIZE=ON >/dev/null
  cmake --build build-asan -j "$jobs" --target vramlab_tests
}

# The parity and finite-difference suites check numbers, which the plain build above
# already holds; under ASan they only repeat engine paths the other suites run (at a
# tenth of the speed), so the sanitized pass leaves them out to keep CI short.
sanitized_tests() {
  seed_costs build-asan sanitized
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '_parity\.|Parity\.|gradcheck\.'
}

for s in "${steps[@]}"; do
  case $s in
    plain) plain_tests ;;
    sanitized-build) sanitized_build ;;
    sanitized) sanitized_tests ;;
    *) echo "test-native.sh: unknown step '$s' (plain, sanitized-build, sanitized)" >&2; exit 2 ;;
  esac
done
