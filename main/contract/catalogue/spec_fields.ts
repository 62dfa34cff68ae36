// The spec's own fields (beyond model and optimizer): type, range, default and meaning.
// Family- and mode-specific defaults (transformers: batch 8; loss_accumulation: 10
// iterations; generate: a prompt and tokens to generate) are listed here too, once.
import { LIMITS } from './limits';

export const PRECISIONS = ['fp32', 'tf32', 'fp16', 'bf16'] as const;
export const WEIGHTS = ['fp32', 'bf16', 'fp16'] as const;
export const MODES = ['train', 'inference', 'loss_accumulation', 'generate'] as const;
export const LOSSES = ['sum', 'mse', 'cross_entropy'] as const;
export const CACHES = ['dynamic', 'static'] as const;
export const CHECKPOINT_MODES = ['none', 'block', 'sqrt'] as const;

export const SPEC_FIELDS = {
  batch: { type: 'int', min: 1, max: LIMITS.batch, default: 256, label: 'Batch size', meaning: 'samples per micro-batch', unit: 'samples' },
  iterations: {
    type: 'int',
    min: 1,
    max: LIMITS.iterations,
    default: 2,
    label: 'Iterations',
    meaning: 'optimizer steps (loss_accumulation: forward passes)',
    unit: 'steps',
  },
  accum: {
    type: 'int',
    min: 1,
    max: LIMITS.accum,
    default: 1,
    label: 'Gradient accumulation steps',
    meaning: 'micro-batches per optimizer step',
    unit: 'micro-batches',
  },
  precision: {
    type: 'enum',
    default: 'fp32',
    label: 'Precision',
    meaning: 'torch.autocast dtype for the forward pass (tf32: fp32 matmuls on tensor cores)',
    options: [
      { value: 'fp32', label: 'fp32' },
      { value: 'tf32', label: 'tf32' },
      { value: 'fp16', label: 'fp16 (autocast)' },
      { value: 'bf16', label: 'bf16 (autocast)' },
    ],
  },
  weights: {
    type: 'enum',
    default: 'fp32',
    label: 'Weights dtype',
    meaning: 'the dtype parameters are stored in (model.to(dtype)); optimizer state follows it',
    options: [
      { value: 'fp32', label: 'fp32' },
      { value: 'bf16', label: 'bf16 (model.to(bfloat16))' },
      { value: 'fp16', label: 'fp16 (model.to(float16))' },
    ],
  },
  set_to_none: {
    type: 'bool',
    default: true,
    label: 'zero_grad(set_to_none)',
    meaning: 'zero_grad frees gradients instead of zeroing them',
  },
  mode: {
    type: 'enum',
    default: 'train',
    label: 'Mode',
    meaning: 'what the run does with the model',
    options: [
      { value: 'train', label: 'Training' },
      { value: 'inference', label: 'Inference (no_grad)' },
      { value: 'loss_accumulation', label: 'Loss accumulation (total += loss)' },
      { value: 'generate', label: 'Generation (KV cache)' },
    ],
  },
  keep_loss_graph: {
    type: 'bool',
    default: true,
    label: 'Keep the loss graph',
    meaning: 'loss_accumulation: total = total + loss (true) or total += loss.item() (false)',
  },
  loss: {
    type: 'enum',
    default: 'sum',
    label: 'Loss',
    meaning: 'the loss backward starts from',
    options: [
      { value: 'sum', label: 'y.float().sum()' },
      { value: 'mse', label: 'MSE (random target)' },
      { value: 'cross_entropy', label: 'Cross-entropy (random labels)' },
    ],
  },
  prompt: {
    type: 'int',
    min: 0,
    max: LIMITS.seq,
    default: 0,
    label: 'Prompt tokens',
    meaning: 'generate: tokens in the prefill',
    unit: 'tokens',
  },
  new_tokens: {
    type: 'int',
    min: 0,
    max: LIMITS.seq,
    default: 0,
    label: 'New tokens',
    meaning: 'generate: tokens generated one at a time after the prefill',
    unit: 'tokens',
  },
  cache: {
    type: 'enum',
    default: 'dynamic',
    label: 'KV cache',
    meaning: 'generate: dynamic grows by torch.cat every step; static is preallocated for prompt + new tokens',
    options: [
      { value: 'dynamic', label: 'dynamic (torch.cat per step)' },
      { value: 'static', label: 'static (preallocated)' },
    ],
  },
  empty_cache_every: {
    type: 'int',
    min: 0,
    max: LIMITS.iterations,
    default: 0,
    label: 'empty_cache() every',
    meaning: 'train: torch.cuda.empty_cache() after every n-th iteration (0: never)',
    unit: 'steps',
  },
  history: {
    type: 'bool',
    default: false,
    label: 'Record allocator history',
    meaning: 'keep every alloc/free for the segment map and snapshot export',
  },
} as const;

/** A draw of per-iteration shapes (main/contract/shapes.ts): its numeric settings. */
export const SHAPE_DRAW_FIELDS = {
  batch: { type: 'int', min: 1, max: LIMITS.batch, default: 8, label: 'Batch size', meaning: 'sequences per step', unit: 'samples' },
  steps: {
    type: 'int',
    min: 1,
    max: LIMITS.shapes,
    default: 200,
    label: 'Steps',
    meaning: 'training iterations, one drawn length each',
    unit: 'steps',
  },
  seed: { type: 'int', min: 0, max: 2 ** 32 - 1, default: 0, label: 'Seed', meaning: 'the same seed draws the same lengths' },
  pad_to: {
    type: 'int',
    min: 1,
    max: LIMITS.seq,
    default: 1,
    label: 'Pad to a multiple of',
    meaning: 'bucketed padding: each length rounded up (1: none)',
    unit: 'tokens',
  },
  min: { type: 'int', min: 1, max: LIMITS.seq, default: 64, label: 'Shortest', meaning: 'uniform lengths from here', unit: 'tokens' },
  max: { type: 'int', min: 1, max: LIMITS.seq, default: 1024, label: 'Longest', meaning: 'uniform lengths up to here', unit: 'tokens' },
} as const;

/** Defaults that depend on the mode: spec keys the mode sets when the user did not. */
export const MODE_DEFAULTS = {
  loss_accumulation: { iterations: 10 },
  generate: { prompt: 128, new_tokens: 128 },
} as const satisfies Partial<Record<(typeof MODES)[number], Record<string, number>>>;

export const DEFAULT_DEVICE = 'sim:h100-80gb';
/** What a spec without model or optimizer gets. */
export const DEFAULT_MODEL_KIND = 'mlp';
export const DEFAULT_OPTIMIZER_KIND = 'adam';
