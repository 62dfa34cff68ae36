#!/usr/bin/env bash
# The runner's threading tests under ThreadSanitizer. Built apart from the main trees
# (TSan cannot be mixed with ASan, and the engine is not needed): only the runner's worker
# and synthetic job, with the worker and drain-stress tests. Optional, not part of npm test.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-tsan
mkdir -p "$out"
g++ -std=c++20 -O1 -g -fsanitize=thread -fno-omit-frame-pointer -Inative \
  native/runner/worker.cpp native/runner/synthetic_job.cpp native/tests/runner_drain_stress_test.cpp \
  -lgtest -lgtest_main -pthread -o "$out/runner_tsan"
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" "$out/runner_tsan" "$@"
