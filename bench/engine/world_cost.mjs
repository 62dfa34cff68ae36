// What simulating data parallel costs: FSDP2 and DDP at world 8 against world 1 (the same
// model and per-rank batch), wall time of the engine's run through the addon, best of 5.
// Ranks PyTorch treats alike are simulated once, so world 8 should cost well under 2x
// world 1 (target). (DDP simulates its one program twice at any world: both ends of the
// range PyTorch's timing allows.)
//   node bench/engine/world_cost.mjs        (needs the addon: build/Release/vramlab.node)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const addon = createRequire(import.meta.url)(path.join(root, 'build/Release/vramlab.node'));
// the contract's completed spec, from the catalogue's defaults (test/fixtures/spec_defaults.json)
const d = JSON.parse(readFileSync(path.join(root, 'test/fixtures/spec_defaults.json'), 'utf8'));
const model = { ...d.models.gpt.model, vocab: 50304, seq: 1024, dim: 768, depth: 12, heads: 12 };
const cases = [
  {
    name: 'GPT-2 124M, FSDP2 bf16, block checkpoint, b4',
    parallel: { ...d.parallel.fsdp2, param_dtype: 'bf16', reduce_dtype: 'fp32' },
    precision: 'fp32',
  },
  { name: 'GPT-2 124M, DDP bf16 autocast, block checkpoint, b4', parallel: { ...d.parallel.ddp }, precision: 'bf16' },
];
const spec = (c, world) => ({
  ...d.spec,
  ...d.models.gpt.spec,
  model,
  batch: 4,
  optimizer: d.optimizers.adamw,
  checkpoint: 'block',
  precision: c.precision,
  parallel: { ...c.parallel, world },
});
const time = (c, world) => {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    addon.runExperiment(spec(c, world));
    best = Math.min(best, performance.now() - t0);
  }
  return best;
};
console.log(
  `${'case'.padEnd(52)} ${'world 1 ms'.padStart(11)} ${'world 8 ms'.padStart(11)} ${'ratio'.padStart(6)} ${'target'.padStart(7)}`,
);
for (const c of cases) {
  const w1 = time(c, 1);
  const w8 = time(c, 8);
  console.log(
    `${c.name.padEnd(52)} ${w1.toFixed(1).padStart(11)} ${w8.toFixed(1).padStart(11)} ${(w8 / w1).toFixed(2).padStart(6)} ${'< 2'.padStart(7)}`,
  );
}
