// `npm start`: builds whatever is missing, then opens the desktop app. Where Electron's
// binary could not be installed (no access to its download), serves the same lab to a
// browser instead and says so.
import { spawnSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const need = [
  ['build/Release/vramlab.node', 'build:native'],
  ['dist/cli.cjs', 'build:main'],
  ['dist/renderer/index.html', 'build:renderer'],
];
for (const [file, script] of need) {
  if (existsSync(path.join(root, file))) continue;
  console.log(`vramlab: building (${script}) ...`);
  const r = spawnSync(npm, ['run', script], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function electronBinary() {
  try {
    const bin = createRequire(import.meta.url)('electron');
    return typeof bin === 'string' && existsSync(bin) ? bin : null;
  } catch {
    return null;
  }
}

const electron = electronBinary();
const headless =
  process.env.VRAMLAB_SERVE === '1' || (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY);
if (electron && !headless) {
  const child = spawn(electron, [root, ...process.argv.slice(2)], { stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  console.log(
    electron
      ? 'vramlab: no display found; serving the lab to a browser instead of opening a window.'
      : "vramlab: Electron's binary is not installed (it is downloaded on `npm install` where GitHub is reachable);\n" +
          '         serving the same lab to a browser instead.',
  );
  const child = spawn(process.execPath, [path.join(root, 'bin', 'vramlab.js'), 'serve', ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code) => process.exit(code ?? 0));
}
