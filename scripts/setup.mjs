// `npm run setup`: everything a fresh checkout needs before `npm start` or `npm test`:
// the npm dependencies (when node_modules is missing), then the native addon, the main
// process bundles and the interface. Each step stops the setup if it fails.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function step(label, args) {
  console.log(`vramlab setup: ${label} (npm ${args.join(' ')})`);
  const r = spawnSync(npm, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (r.status !== 0) {
    console.error(`vramlab setup: ${label} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

if (!existsSync(path.join(root, 'node_modules', '.package-lock.json'))) step('installing dependencies', ['install']);
step('building the native addon', ['run', 'build:native']);
step('bundling the main process and CLI', ['run', 'build:main']);
step('building the interface', ['run', 'build:renderer']);
console.log('vramlab setup: done. `npm start` opens the lab; `npm test` runs every test.');
