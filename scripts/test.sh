#!/usr/bin/env bash
# `npm test`: everything CI runs. Builds first, so a fresh clone needs only `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-output
echo "== formatting (prettier, clang-format)"
npm run -s format:check
echo "== lint (eslint)"
npm run -s lint
echo "== build: native addon + native tests in one tree (CUDA code compiled when nvcc exists)"
npx cmake-js compile --CDVRAMLAB_TESTS=ON
echo "== build: main + renderer"
npm run build:main
npm run build:renderer
echo "== typecheck"; npm run typecheck
echo "== native tests (ctest, plain + sanitized)"
VRAMLAB_TEST_BUILD=build CTEST_OUTPUT_ON_FAILURE=1 bash scripts/test-native.sh 2>&1 | tee test-output/ctest.log
echo "== unit + component tests (vitest)"
npx vitest run --project unit --project component --reporter=default --reporter=json --outputFile=test-output/vitest-unit.json
echo "== end-to-end (Chromium)"
npx vitest run --project e2e --reporter=default --reporter=json --outputFile=test-output/vitest-e2e.json
node scripts/test-summary.mjs
