#!/usr/bin/env bash
# `npm test`: everything CI runs. Builds first, so a fresh clone needs only `npm ci`.
# Each phase is timed; the table at the end (also test-output/phases.txt) shows where CI's
# time goes, and is printed on failure too, with the phase that failed.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-output
: >test-output/phases.txt
start=$SECONDS
current=""
phase_start=$SECONDS

begin() {
  current=$1
  phase_start=$SECONDS
  echo "== $1"
}
end() {
  printf '%6d s  %s\n' $((SECONDS - phase_start)) "$current" >>test-output/phases.txt
  current=""
}
report() {
  [ -n "$current" ] && printf '%6d s  %s  (FAILED)\n' $((SECONDS - phase_start)) "$current" >>test-output/phases.txt
  echo
  echo "== time per phase"
  cat test-output/phases.txt
  printf '%6d s  total\n' $((SECONDS - start))
}
trap report EXIT

# The three source checks are single-threaded and need no build: run side by side on CI's two
# cores, each into its own log, shown in order once all are done.
begin "formatting (prettier, clang-format), lint (eslint), typecheck: side by side"
checks=(format:check lint typecheck)
pids=()
for c in "${checks[@]}"; do
  npm run -s "$c" >"test-output/$c.log" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!checks[@]}"; do
  wait "${pids[$i]}" || failed+=("${checks[$i]}")
done
for c in "${checks[@]}"; do
  echo "-- npm run $c"
  cat "test-output/$c.log"
done
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
end
begin "build: native addon + native tests in one tree (CUDA code compiled when nvcc exists)"
npx cmake-js compile --CDVRAMLAB_TESTS=ON
end
begin "build: main + renderer"
npm run build:main
npm run build:renderer
end
: >test-output/ctest.log
begin "native tests, plain (ctest)"
VRAMLAB_TEST_BUILD=build CTEST_OUTPUT_ON_FAILURE=1 bash scripts/test-native.sh plain 2>&1 | tee -a test-output/ctest.log
end
begin "build: native tests under ASan+UBSan"
bash scripts/test-native.sh sanitized-build
end
begin "native tests, ASan+UBSan (ctest)"
CTEST_OUTPUT_ON_FAILURE=1 bash scripts/test-native.sh sanitized 2>&1 | tee -a test-output/ctest.log
end
begin "unit + component tests (vitest)"
npx vitest run --project unit --project component --reporter=default --reporter=json --outputFile=test-output/vitest-unit.json
end
begin "end-to-end (Chromium)"
npx vitest run --project e2e --reporter=default --reporter=json --outputFile=test-output/vitest-e2e.json
end
trap - EXIT
report
node scripts/test-summary.mjs
