#!/usr/bin/env node
// C++/CUDA formatting against .clang-format: `--check` fails on any difference (CI), `--write` fixes.
// Files are the tracked and untracked-but-not-ignored ones, so a new file is checked before it is added.
import { execFileSync, spawnSync } from 'node:child_process';

const mode = process.argv[2];
if (mode !== '--check' && mode !== '--write') {
  console.error('usage: node scripts/clang-format.mjs --check | --write');
  process.exit(2);
}
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { encoding: 'utf8' })
  .split('\0')
  .filter((f) => /\.(cpp|cc|h|hpp|cu|cuh)$/.test(f));
const args = mode === '--check' ? ['--dry-run', '-Werror'] : ['-i'];
let failed = false;
// Batches keep each command line short.
for (let i = 0; i < files.length; i += 100) {
  const r = spawnSync('clang-format', [...args, ...files.slice(i, i + 100)], { stdio: 'inherit' });
  if (r.error) {
    console.error(`clang-format could not run (${r.error.message}); install it (Debian: apt-get install clang-format)`);
    process.exit(2);
  }
  if (r.status !== 0) failed = true;
}
if (failed) {
  console.error('C++ formatting differs from .clang-format: run `npm run format`');
  process.exit(1);
}
console.log(`clang-format: ${files.length} files ${mode === '--check' ? 'match' : 'formatted'}`);
