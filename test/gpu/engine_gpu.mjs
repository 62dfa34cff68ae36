// On the GPU machine: the parity protocol on cuda:0 (real cudaMalloc, real kernels) against
// PyTorch's published readings and against our sim device. Prints a table.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const a = createRequire(import.meta.url)(process.env.VRAMLAB_ADDON);
const ref = JSON.parse(readFileSync('test/refs/pytorch_reference.json', 'utf8')).parity_examples.runs;
const MiB = 2 ** 20;
let worst = 0;
const rows = [];
for (const run of ref) {
  const c = run.config;
  const cfg = { ...c, model: c.model, optimizer: c.opt, checkpoint: c.ckpt ?? 'none' };
  const gpu = a.runProtocol({ ...cfg, device: 'cuda:0', backend: 'cuda' });
  const sim = a.runProtocol({ ...cfg, device: 'sim:h200-141gb', backend: 'sim' });
  for (const [k, want] of Object.entries(run.torch)) {
    const g = gpu.readings[k], s = sim.readings[k];
    worst = Math.max(worst, Math.abs(g - want) / Math.max(want, 1));
    rows.push([`${c.model}/${c.opt}/${c.ckpt ?? '-'}`, k, want, g, s, g === want ? 'exact' : `${((g - want) / MiB).toFixed(3)} MiB`]);
  }
}
console.log(['config', 'reading', 'pytorch', 'ours cuda:0', 'ours sim', 'cuda vs torch'].join('\t'));
for (const r of rows) console.log(r.join('\t'));
console.log(`worst relative error on cuda:0: ${(worst * 100).toFixed(4)}%`);
