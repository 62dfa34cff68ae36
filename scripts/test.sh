#!/usr/bin/env bash
# `npm test`: everything CI runs. Builds first, so a fresh clone needs only `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== build"; npm run build
echo "== typecheck"; npm run typecheck
echo "== native tests (ctest, plain + sanitized)"; bash scripts/test-native.sh
echo "== unit + component tests (vitest)"; npx vitest run --project unit --project component
echo "== end-to-end (Chromium)"; npx vitest run --project e2e
