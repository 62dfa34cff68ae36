// The validated spec flattened into the shape native/runner/job_spec.h reads.
import type { NativeJob } from '../addon/types';
import type { Spec } from '../contract/spec';

export function toNativeJob(spec: Spec): NativeJob {
  const m = spec.model;
  const ck = spec.checkpoint;
  return {
    kind: 'protocol',
    model: m.kind,
    ...(m.kind === 'mlp' ? { in: m.in, hidden: m.hidden, out: m.out } : { dim: m.dim }),
    depth: m.depth,
    batch: spec.batch,
    iterations: spec.iterations,
    accum: spec.accum,
    checkpoint: typeof ck === 'string' ? ck : 'every',
    checkpoint_every: typeof ck === 'string' ? 0 : ck.every,
    precision: spec.precision,
    optimizer: spec.optimizer.kind,
    lr: spec.optimizer.lr,
    momentum: spec.optimizer.momentum,
    weight_decay: spec.optimizer.weight_decay,
    foreach: spec.optimizer.foreach,
    set_to_none: spec.set_to_none,
    mode: spec.mode,
    keep_loss_graph: spec.keep_loss_graph,
    loss: spec.loss,
    alloc_conf: spec.alloc_conf,
    device: spec.device,
    capacity: spec.capacity ?? 0,
    history: spec.history,
    sample_every: 1,
  };
}
