// One closing line for the whole `npm test`: ctest's and vitest's counts added up.
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
for (const f of ['test-output/vitest-unit.json', 'test-output/vitest-e2e.json']) {
  const r = JSON.parse(readFileSync(f, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
}
const ctest = readFileSync('test-output/ctest.log', 'utf8');
for (const m of ctest.matchAll(/tests passed, (\d+) tests failed out of (\d+)/g)) {
  failed += Number(m[1]);
  passed += Number(m[2]) - Number(m[1]);
}
skipped += (ctest.match(/\*\*\*Skipped/g) ?? []).length;
passed -= (ctest.match(/\*\*\*Skipped/g) ?? []).length; // ctest counts skipped tests as passed
console.log(`\nvramlab: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed ? 1 : 0;
