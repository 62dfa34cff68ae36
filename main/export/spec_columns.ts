// A spec flattened to named columns, for summary tables and CSV.
import { checkpointLabel, type Spec } from '../contract/spec';

export const SPEC_COLUMNS = [
  'model',
  'model_in',
  'model_hidden',
  'model_out',
  'model_dim',
  'model_depth',
  'batch',
  'iterations',
  'accum',
  'checkpoint',
  'precision',
  'optimizer',
  'optimizer_lr',
  'optimizer_foreach',
  'set_to_none',
  'mode',
  'keep_loss_graph',
  'loss',
  'alloc_conf',
  'device',
  'capacity_bytes',
] as const;

export function specColumns(spec: Spec): Record<(typeof SPEC_COLUMNS)[number], string | number | boolean | null> {
  const m = spec.model;
  return {
    model: m.kind,
    model_in: m.kind === 'mlp' ? m.in : null,
    model_hidden: m.kind === 'mlp' ? m.hidden : null,
    model_out: m.kind === 'mlp' ? m.out : null,
    model_dim: m.kind === 'residual' ? m.dim : null,
    model_depth: m.depth,
    batch: spec.batch,
    iterations: spec.iterations,
    accum: spec.accum,
    checkpoint: checkpointLabel(spec.checkpoint),
    precision: spec.precision,
    optimizer: spec.optimizer.kind,
    optimizer_lr: spec.optimizer.lr,
    optimizer_foreach: spec.optimizer.foreach,
    set_to_none: spec.set_to_none,
    mode: spec.mode,
    keep_loss_graph: spec.keep_loss_graph,
    loss: spec.loss,
    alloc_conf: spec.alloc_conf,
    device: spec.device,
    capacity_bytes: spec.capacity,
  };
}
