// Analytic peak-memory estimate for a spec, computed before anything runs: parameters x
// (4 weights + 4 gradients + optimizer state) plus batch x saved activations, phase by
// phase. Pure and synchronous so the form can redo it on every keystroke.
import type { SpecInput } from '$contract/spec';

export interface Prediction {
  params: number; // parameter count
  weights: number; // bytes, fp32 master weights
  gradients: number;
  optimizerState: number;
  input: number;
  activations: number; // saved for backward at the end of the forward pass
  recompute: number; // one checkpointed segment's activations rebuilt during backward
  autocastCopies: number; // half-precision weight copies autocast caches during forward
  stepTemporaries: number; // foreach Adam's intermediates during step()
  gradTemporaries: number; // gradients flowing between layers during backward
  peakForwardBackward: number;
  peakStep: number;
  peak: number;
  /** One line per term, for the form's breakdown. */
  terms: Array<{ label: string; bytes: number }>;
}

interface Model {
  kind: 'mlp' | 'residual';
  in: number;
  hidden: number;
  depth: number;
  out: number;
  dim: number;
}

const round512 = (b: number) => (b <= 0 ? 0 : Math.ceil(b / 512) * 512);

function modelOf(spec: SpecInput): Model {
  const m = (spec.model ?? {}) as Partial<Model>;
  const kind = m.kind === 'residual' ? 'residual' : 'mlp';
  return {
    kind,
    in: m.in ?? 1024,
    hidden: m.hidden ?? 2048,
    depth: m.depth ?? (kind === 'residual' ? 20 : 2),
    out: m.out ?? 10,
    dim: m.dim ?? 512,
  };
}

/** Parameter tensors as [rows, cols] weights plus biases, in model order. */
export function parameterShapes(spec: SpecInput): number[] {
  const m = modelOf(spec);
  const sizes: number[] = [];
  const linear = (i: number, o: number) => sizes.push(i * o, o);
  if (m.kind === 'mlp') {
    linear(m.in, m.hidden);
    for (let i = 1; i < m.depth; i++) linear(m.hidden, m.hidden);
    linear(m.hidden, m.out);
  } else {
    for (let i = 0; i < m.depth; i++) {
      linear(m.dim, m.dim);
      linear(m.dim, m.dim);
    }
  }
  return sizes;
}

/** Consecutive blocks per checkpointed segment (PyTorch's checkpoint_sequential with round(sqrt(n)) segments). */
export function segmentLength(checkpoint: SpecInput['checkpoint'], depth: number): number {
  if (checkpoint === undefined || checkpoint === 'none') return 0;
  if (checkpoint === 'block') return 1;
  if (checkpoint === 'sqrt') return Math.ceil(depth / Math.max(1, Math.round(Math.sqrt(depth))));
  return Math.max(1, Math.min(depth, checkpoint.every));
}

function optimizerKind(spec: SpecInput): { kind: string; momentum: number; foreach: boolean } {
  const o = spec.optimizer ?? 'adam';
  if (typeof o === 'string') return { kind: o, momentum: 0, foreach: true };
  return { kind: o.kind, momentum: o.momentum ?? 0, foreach: o.foreach ?? true };
}

export function predictPeak(spec: SpecInput): Prediction {
  const m = modelOf(spec);
  const batch = spec.batch ?? 256;
  const precision = spec.precision ?? 'fp32';
  const mode = spec.mode ?? 'train';
  const accum = spec.accum ?? 1;
  const train = mode === 'train';
  // Loss accumulation runs forward passes only: graphs are kept, nothing is backpropagated.
  const graphsOnly = mode === 'loss_accumulation';
  const half = precision === 'fp16' || precision === 'bf16';
  const actBytes = half ? 2 : 4;
  const opt = optimizerKind(spec);

  const shapes = parameterShapes(spec);
  const params = shapes.reduce((a, b) => a + b, 0);
  const paramBytes = shapes.reduce((a, n) => a + round512(n * 4), 0);
  const largest = Math.max(...shapes.map((n) => round512(n * 4)));

  const weights = paramBytes;
  const gradients = train ? paramBytes : 0;
  const stateCopies = !train ? 0 : opt.kind === 'adam' || opt.kind === 'adamw' ? 2 : opt.kind === 'sgd' && opt.momentum > 0 ? 1 : 0;
  const optimizerState = stateCopies * paramBytes;
  const width = m.kind === 'mlp' ? m.hidden : m.dim;
  const inFeatures = m.kind === 'mlp' ? m.in : m.dim;
  const input = round512(batch * inFeatures * 4);
  const outFeatures = m.kind === 'mlp' ? m.out : m.dim;

  // Saved for backward, per sample: ReLU keeps its output (which is the next Linear's
  // input); a residual block keeps both ReLU outputs and its sum.
  const perBlock = m.kind === 'mlp' ? m.hidden : 3 * m.dim;
  const seg = segmentLength(spec.checkpoint, m.depth);
  let savedPerSample: number;
  let recomputePerSample = 0;
  if (seg === 0 || graphsOnly) savedPerSample = m.depth * perBlock + (m.kind === 'mlp' ? m.out : 0);
  else {
    // Checkpointing keeps each segment's input instead; backward rebuilds one segment at a time.
    const segments = Math.ceil(m.depth / seg);
    savedPerSample = segments * width + (m.kind === 'mlp' ? m.out : 0);
    recomputePerSample = seg * perBlock;
  }
  // Kept graphs: every iteration's with `total = total + loss`; with .item() the previous
  // graph lives until the next forward has built its own.
  const graphs = graphsOnly ? ((spec.keep_loss_graph ?? true) ? (spec.iterations ?? 2) : 2) : 1;
  const activations = train || graphsOnly ? round512(batch * savedPerSample * actBytes) * graphs : 0;
  // Backward holds the gradients flowing between layers: about two activation-sized tensors.
  const gradTemporaries = train ? 2 * round512(batch * width * actBytes) : 0;
  const recompute = train ? round512(batch * recomputePerSample * actBytes) : 0;
  const autocastCopies = half ? shapes.reduce((a, n) => a + round512(n * 2), 0) : 0;
  const stepTemporaries = stateCopies === 2 ? (opt.foreach ? paramBytes : largest) : 0;

  let peakForwardBackward: number;
  let peakStep = 0;
  if (graphsOnly) {
    peakForwardBackward = weights + input + activations + round512(batch * width * actBytes) + autocastCopies;
  } else if (!train) {
    // No graph: at most a layer's input and output are alive together.
    const live = round512(batch * Math.max(inFeatures, width) * actBytes) + round512(batch * Math.max(width, outFeatures) * actBytes);
    peakForwardBackward = weights + input + live + autocastCopies;
  } else {
    // Gradients outlive the first micro-batch when accumulating; activations are freed as gradients appear.
    const gradsDuringForward = accum > 1 ? gradients : 0;
    peakForwardBackward =
      weights + optimizerState + input + Math.max(activations + gradsDuringForward + autocastCopies, gradients + recompute + gradTemporaries);
    if (mode === 'train' && opt.kind !== 'none') peakStep = weights + gradients + optimizerState + input + stepTemporaries;
  }
  const peak = Math.max(peakForwardBackward, peakStep);
  const terms = [
    { label: 'weights (4 B/param)', bytes: weights },
    { label: 'gradients (4 B/param)', bytes: gradients },
    { label: `optimizer state (${stateCopies * 4} B/param)`, bytes: optimizerState },
    { label: 'input batch', bytes: input },
    { label: `activations (${actBytes} B/value)`, bytes: activations },
    { label: 'checkpoint recompute', bytes: recompute },
    { label: 'autocast weight copies', bytes: autocastCopies },
    { label: 'optimizer step temporaries', bytes: stepTemporaries },
    { label: 'backward gradient temporaries', bytes: gradTemporaries },
  ].filter((t) => t.bytes > 0);
  return {
    params,
    weights,
    gradients,
    optimizerState,
    input,
    activations,
    recompute,
    autocastCopies,
    stepTemporaries,
    gradTemporaries,
    peakForwardBackward,
    peakStep,
    peak,
    terms,
  };
}
