// `npm run bench`: builds the native benchmarks and runs every benchmark, each printing its
// table (side by side with PyTorch's reference figures where one exists).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
};
const only = process.argv.slice(2);
const wanted = (name) => only.length === 0 || only.some((o) => name.includes(o));

const build = path.join(root, 'build-bench');
run('cmake', ['-S', '.', '-B', build, '-DCMAKE_BUILD_TYPE=Release', '-DVRAMLAB_TESTS=ON', '-DVRAMLAB_ADDON=OFF'], { stdio: 'ignore' });
run('cmake', ['--build', build, '-j', '2']);

const benches = readdirSync(build)
  .filter((f) => f.startsWith('vramlab_bench_'))
  .sort();
for (const b of benches) {
  if (!wanted(b)) continue;
  console.log(`\n== ${b}`);
  run(path.join(build, b), [], { env: { ...process.env, VRAMLAB_SOURCE_DIR: root } });
}
for (const script of [
  'bench/engine/fit_time.mjs',
  'bench/engine/hf_time.mjs',
  'bench/engine/world_cost.mjs',
  'bench/ui/framerate.mjs',
  'bench/ui/app_vs_cli.mjs',
  'bench/snapshot/bench_large.mjs',
]) {
  if (existsSync(path.join(root, script)) && wanted(script)) {
    console.log(`\n== ${script}`);
    run(process.execPath, [script]);
  }
}
