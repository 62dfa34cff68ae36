// The seeds' back-of-envelope estimate: parameters x (4 weights + 4 gradients + 8 Adam)
// + batch x activations, shown next to the measured peak. Activations per sample are
// what autograd keeps alive after the forward: for the MLP each ReLU output plus the
// logits; for a residual block its two ReLU outputs and its sum (with checkpointing,
// only segment inputs plus one segment recomputed during backward).
import type { Estimate } from '../contract/runs';
import type { Spec } from '../contract/spec';

export function parameterCount(spec: Spec): number {
  const m = spec.model;
  if (m.kind === 'mlp') return m.in * m.hidden + m.hidden + (m.depth - 1) * (m.hidden * m.hidden + m.hidden) + m.hidden * m.out + m.out;
  return m.depth * 2 * (m.dim * m.dim + m.dim);
}

function elementBytes(spec: Spec): number {
  return spec.precision === 'fp16' || spec.precision === 'bf16' ? 2 : 4;
}

/** Bytes autograd keeps per sample after one forward. */
export function activationBytesPerSample(spec: Spec): number {
  const m = spec.model;
  const e = elementBytes(spec);
  if (spec.mode === 'inference') {
    // Nothing is saved: a layer's input and output are alive at once.
    const width = m.kind === 'mlp' ? Math.max(m.in, m.hidden, m.out) : m.dim;
    return 2 * width * e;
  }
  let saved: number;
  if (m.kind === 'mlp') saved = (m.depth * m.hidden + m.out) * e;
  else {
    const ck = spec.checkpoint;
    const per = (n: number) => n * 3 * m.dim * e; // n blocks saved whole
    if (ck === 'none') saved = per(m.depth);
    else {
      const seg = ck === 'block' ? 1 : ck === 'sqrt' ? Math.ceil(m.depth / Math.max(1, Math.round(Math.sqrt(m.depth)))) : ck.every;
      saved = Math.ceil(m.depth / seg) * m.dim * e + per(seg);
    }
  }
  if (spec.mode === 'loss_accumulation' && spec.keep_loss_graph) saved *= spec.iterations;
  return saved;
}

export function estimate(spec: Spec, measuredPeak: number | null): Estimate {
  const parameters = parameterCount(spec);
  const train = spec.mode === 'train';
  const opt = spec.optimizer;
  const optimizer = !train ? 0 : opt.kind === 'adam' || opt.kind === 'adamw' ? 8 : opt.kind === 'sgd' && opt.momentum > 0 ? 4 : 0;
  const perParam = { weights: 4, gradients: train ? 4 : 0, optimizer };
  const activation = activationBytesPerSample(spec);
  const bytes = parameters * (perParam.weights + perParam.gradients + perParam.optimizer) + spec.batch * activation;
  const error = measuredPeak && measuredPeak > 0 ? ((bytes - measuredPeak) / measuredPeak) * 100 : null;
  return {
    parameters,
    bytes_per_parameter: perParam,
    activation_bytes_per_sample: activation,
    bytes,
    measured_peak: measuredPeak,
    error_pct: error,
  };
}
