// Wall time of `vramlab fit --param batch` on GPT-2 medium under a 24 GiB cap, through the
// CLI as a user runs it (each probe a full simulated run). Target: under 3 s.
//   node bench/engine/fit_time.mjs        (needs the addon and `npm run build:main`)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const home = mkdtempSync(path.join(tmpdir(), 'vramlab-fit-bench-'));
const cases = [
  ['GPT-2 medium (fp32, Adam), 24 GiB cap', { model: { kind: 'gpt', vocab: 50257, seq: 1024, dim: 1024, depth: 24, heads: 16 } }],
  [
    'GPT-2 medium (bf16, AdamW), 24 GiB cap',
    { model: { kind: 'gpt', vocab: 50257, seq: 1024, dim: 1024, depth: 24, heads: 16 }, precision: 'bf16', optimizer: 'adamw' },
  ],
];
try {
  console.log(
    `${'case'.padEnd(44)} ${'answer'.padStart(7)} ${'probes'.padStart(7)} ${'wall s (best of 3)'.padStart(19)} ${'target s'.padStart(9)}`,
  );
  for (const [name, spec] of cases) {
    const file = path.join(home, 'spec.json');
    writeFileSync(file, JSON.stringify(spec));
    let best = Infinity;
    let out = null;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const r = spawnSync(
        process.execPath,
        [path.join(root, 'bin/vramlab.js'), 'fit', file, '--param', 'batch', '--capacity', '24GiB', '--json', '-q'],
        {
          env: { ...process.env, VRAMLAB_HOME: path.join(home, 'store') },
          encoding: 'utf8',
        },
      );
      if (r.status !== 0) throw new Error(`vramlab fit failed: ${r.stderr}`);
      best = Math.min(best, (performance.now() - t0) / 1000);
      out = JSON.parse(r.stdout);
    }
    console.log(
      `${name.padEnd(44)} ${String(out.value).padStart(7)} ${String(out.probes.length).padStart(7)} ${best.toFixed(2).padStart(19)} ${'3'.padStart(9)}`,
    );
  }
} finally {
  rmSync(home, { recursive: true, force: true });
}
