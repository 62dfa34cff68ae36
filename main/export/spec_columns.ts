// A spec flattened to named columns, for summary tables and CSV. Model and optimizer columns
// come from the catalogue: model_<field> for every family's fields, optimizer_<field> for
// every optimizer's; a field the run's family or optimizer lacks is empty, and so is every
// column of a key the run's mode does not read (catalogue/applies.ts: no optimizer on a
// generation row, no prompt on a training row).
import { checkpointLabel, type Spec } from '../contract/spec';
import { MODE_KEYS, families, fieldNames, modeReads, modelSizes, optimizers } from '../contract/catalogue';
import { describeShapes } from '../contract/shapes';

type Cell = string | number | boolean | null;

const MODEL_FIELDS = fieldNames(families());
const OPTIMIZER_FIELDS = fieldNames(optimizers());

export const SPEC_COLUMNS: readonly string[] = [
  'model',
  ...MODEL_FIELDS.map((f) => `model_${f}`),
  'batch',
  'iterations',
  'accum',
  'checkpoint',
  'precision',
  'weights',
  'optimizer',
  ...OPTIMIZER_FIELDS.map((f) => `optimizer_${f}`),
  'set_to_none',
  'mode',
  'keep_loss_graph',
  'loss',
  'finetune',
  'finetune_blocks',
  'finetune_rank',
  'finetune_alpha',
  'finetune_targets',
  'shapes',
  'prompt',
  'new_tokens',
  'cache',
  'empty_cache_every',
  'alloc_conf',
  'device',
  'capacity_bytes',
  'parallel',
  'parallel_world',
];

/** Runs stored before a field existed lack it: those cells are empty. */
export function specColumns(stored: Spec): Record<string, Cell> {
  const spec = { ...stored, finetune: stored.finetune ?? { method: 'full' } };
  // A family that keeps its sizes elsewhere (hf: in its config.json) fills depth, dim, vocab ... from them.
  const model = { ...(modelSizes(spec.model) as unknown as Record<string, Cell>), ...(spec.model as unknown as Record<string, Cell>) };
  const opt = spec.optimizer as unknown as Record<string, Cell>;
  const ft = spec.finetune as { method: string; blocks?: number; rank?: number; alpha?: number; targets?: string[] };
  const row: Record<string, Cell> = {
    model: spec.model.kind,
    ...Object.fromEntries(MODEL_FIELDS.map((f) => [`model_${f}`, model[f] ?? null])),
    batch: spec.batch,
    iterations: spec.iterations,
    accum: spec.accum,
    checkpoint: checkpointLabel(spec.checkpoint),
    precision: spec.precision,
    weights: spec.weights ?? null,
    optimizer: spec.optimizer.kind,
    ...Object.fromEntries(OPTIMIZER_FIELDS.map((f) => [`optimizer_${f}`, opt[f] ?? null])),
    set_to_none: spec.set_to_none,
    mode: spec.mode,
    keep_loss_graph: spec.keep_loss_graph,
    loss: spec.loss,
    finetune: ft.method,
    finetune_blocks: ft.blocks ?? null,
    finetune_rank: ft.rank ?? null,
    finetune_alpha: ft.alpha ?? null,
    finetune_targets: ft.targets ? ft.targets.join('+') : null,
    shapes: spec.shapes ? describeShapes(spec.shapes) : null,
    prompt: spec.prompt ?? null,
    new_tokens: spec.new_tokens ?? null,
    cache: spec.cache ?? null,
    empty_cache_every: spec.empty_cache_every ?? null,
    alloc_conf: spec.alloc_conf,
    device: spec.device,
    capacity_bytes: spec.capacity,
    parallel: spec.parallel?.kind ?? null,
    parallel_world: spec.parallel?.world ?? null,
  };
  for (const col of SPEC_COLUMNS) {
    const key = MODE_KEYS.find((k) => col === k || col.startsWith(`${k}_`));
    if (key && !modeReads(spec.mode, key)) row[col] = null;
  }
  return row;
}
