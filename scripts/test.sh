#!/usr/bin/env bash
# `npm test`: everything CI runs. Builds first, so a fresh clone needs only `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== build: native addon + native tests in one tree (CUDA code compiled when nvcc exists)"
npx cmake-js compile --CDVRAMLAB_TESTS=ON
echo "== build: main + renderer"
npm run build:main
npm run build:renderer
echo "== typecheck"; npm run typecheck
echo "== native tests (ctest, plain + sanitized)"; VRAMLAB_TEST_BUILD=build bash scripts/test-native.sh
echo "== unit + component tests (vitest)"; npx vitest run --project unit --project component
echo "== end-to-end (Chromium)"; npx vitest run --project e2e
