#!/usr/bin/env bash
# Native tests: the GoogleTest suite, plain and under ASan+UBSan, through ctest.
# CUDA code is compiled (when nvcc exists) in the plain build so it can't rot; GPU tests
# skip themselves without a GPU. VRAMLAB_TEST_BUILD names an already-configured build tree
# (npm test reuses cmake-js's build/ so the CUDA sources compile once).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
gen=$(command -v ninja >/dev/null && echo "-G Ninja" || echo "")

plain=${VRAMLAB_TEST_BUILD:-build-tests}
if [ -z "${VRAMLAB_TEST_BUILD:-}" ]; then
  cmake -S . -B "$plain" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVRAMLAB_TESTS=ON -DVRAMLAB_ADDON=OFF >/dev/null
  cmake --build "$plain" -j "$jobs"
fi
ctest --test-dir "$plain" --output-on-failure -j "$jobs"

if [ "${VRAMLAB_SKIP_SANITIZE:-0}" != 1 ]; then
  cmake -S . -B build-asan $gen -DCMAKE_BUILD_TYPE=Debug -DVRAMLAB_TESTS=ON -DVRAMLAB_ADDON=OFF \
    -DVRAMLAB_CUDA=OFF -DVRAMLAB_SANITIZE=ON >/dev/null
  cmake --build build-asan -j "$jobs"
  # The parity and finite-difference suites check numbers, which the plain build above
  # already holds; under ASan they only repeat engine paths the other suites run (at a
  # tenth of the speed), so the sanitized pass leaves them out to keep CI short.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -E '_parity\.|Parity\.|gradcheck\.'
fi
