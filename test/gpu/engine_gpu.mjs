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
  const { opt, ckpt, ...rest } = c;
  const cfg = { ...rest, optimizer: opt, checkpoint: ckpt ?? 'none' };
  const gpu = a.runProtocol({ ...cfg, device: 'cuda:0', backend: 'cuda' });
  const sim = a.runProtocol({ ...cfg, device: 'sim:h200-141gb', backend: 'sim' });
  for (const [k, want] of Object.entries(run.torch)) {
    const g = gpu.readings[k],
      s = sim.readings[k];
    worst = Math.max(worst, Math.abs(g - want) / Math.max(want, 1));
    rows.push([`${c.model}/${c.opt}/${c.ckpt ?? '-'}`, k, want, g, s, g === want ? 'exact' : `${((g - want) / MiB).toFixed(3)} MiB`]);
  }
}
console.log(['config', 'reading', 'pytorch', 'ours cuda:0', 'ours sim', 'cuda vs torch'].join('\t'));
for (const r of rows) console.log(r.join('\t'));
console.log(`worst relative error on cuda:0: ${(worst * 100).toFixed(4)}%`);

// Our own H200 measurements (35 configurations, plain-matmul warm-up) on cuda:0.
const measured = [
  ...JSON.parse(readFileSync('test/refs/measured/h200_protocol_matmul_warmup.json', 'utf8')).runs,
  ...JSON.parse(readFileSync('test/refs/measured/h200_protocol_loss_matmul_warmup.json', 'utf8')).runs,
];
let exact = 0,
  within = 0,
  off = 0;
for (const run of measured) {
  const s = run.spec,
    m = s.model;
  const cfg = {
    warmup: 'matmul',
    device: 'cuda:0',
    backend: 'cuda',
    model: m.kind,
    batch: s.batch ?? 256,
    iterations: s.iterations ?? (s.mode === 'loss_accumulation' ? 10 : 2),
    accum: s.accum ?? 1,
    precision: s.precision ?? 'fp32',
    mode: s.mode ?? 'train',
    set_to_none: s.set_to_none ?? true,
    keep_loss_graph: s.keep_loss_graph ?? true,
    loss: s.loss ?? 'sum',
  };
  if (m.kind === 'mlp') Object.assign(cfg, { in: m.in, hidden: m.hidden, depth: m.depth, out: m.out });
  else Object.assign(cfg, { dim: m.dim, depth: m.depth });
  const ck = s.checkpoint ?? 'none';
  if (typeof ck === 'object') Object.assign(cfg, { checkpoint: 'every_k', checkpoint_k: ck.every });
  else cfg.checkpoint = ck;
  const o = s.optimizer ?? 'sgd';
  if (typeof o === 'object') Object.assign(cfg, { optimizer: o.kind, foreach: o.foreach ?? true });
  else cfg.optimizer = o;
  if (cfg.mode === 'loss_accumulation') cfg.loss_steps = cfg.iterations;
  let r;
  try {
    r = a.runProtocol(cfg);
  } catch (e) {
    console.log('ERROR', JSON.stringify(s), e.message);
    off++;
    continue;
  }
  const diffs = [];
  let bad = false;
  for (const [k, want] of Object.entries(run.readings)) {
    const got = r.readings[k];
    if (got !== want) diffs.push(`${k}:${((got - want) / MiB).toFixed(3)}MiB`);
    if (got === undefined || Math.abs(got - want) > Math.max(0.01 * want, 2 * MiB)) bad = true;
  }
  if (bad) off++;
  else if (diffs.length) within++;
  else exact++;
  if (diffs.length) console.log(bad ? 'OFF' : 'within', JSON.stringify(s), diffs.join(' '));
}
console.log(
  `measured configurations (incl. mse / cross_entropy) on cuda:0: ${exact} exact, ${within} within tolerance, ${off} off (of ${measured.length})`,
);
