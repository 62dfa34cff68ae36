// The experiment form's state (what the user typed, as text) and its translation into a
// SpecInput, with a reason per field. The contract's checkSpec has the final word; this
// module adds the checks that only make sense on typed text and maps issues to fields.
import { checkSpec, parseSize, type SpecInput } from '$contract/spec';

export interface FormState {
  modelKind: 'mlp' | 'residual';
  in: string;
  hidden: string;
  out: string;
  dim: string;
  depth: string;
  batch: string;
  iterations: string;
  accum: string;
  checkpoint: 'none' | 'block' | 'every' | 'sqrt';
  every: string;
  precision: 'fp32' | 'tf32' | 'fp16' | 'bf16';
  optimizer: 'none' | 'sgd' | 'adam' | 'adamw';
  mode: 'train' | 'inference' | 'loss_accumulation';
  loss: 'sum' | 'mse' | 'cross_entropy';
  maxSplitMb: string;
  expandable: boolean;
  gcThreshold: string;
  roundupDivisions: string;
  device: string;
  capacity: string;
  history: boolean;
}

export type FieldName = keyof FormState;
export type FieldErrors = Partial<Record<FieldName, string>>;

export function defaultForm(): FormState {
  return {
    modelKind: 'mlp',
    in: '1024',
    hidden: '2048',
    out: '10',
    dim: '512',
    depth: '2',
    batch: '256',
    iterations: '2',
    accum: '1',
    checkpoint: 'none',
    every: '2',
    precision: 'fp32',
    optimizer: 'adam',
    mode: 'train',
    loss: 'sum',
    maxSplitMb: '',
    expandable: false,
    gcThreshold: '',
    roundupDivisions: '',
    device: 'sim:h100-80gb',
    capacity: '',
    history: true,
  };
}

const INT = /^\s*[0-9]+\s*$/;
const NUM = /^\s*[0-9]*\.?[0-9]+(e-?[0-9]+)?\s*$/i;

/** The allocator's PYTORCH_CUDA_ALLOC_CONF string for the form's settings. */
export function allocConf(f: FormState): string {
  const parts: string[] = [];
  if (f.maxSplitMb.trim()) parts.push(`max_split_size_mb:${f.maxSplitMb.trim()}`);
  if (f.expandable) parts.push('expandable_segments:True');
  if (f.gcThreshold.trim()) parts.push(`garbage_collection_threshold:${f.gcThreshold.trim()}`);
  if (f.roundupDivisions.trim()) parts.push(`roundup_power2_divisions:${f.roundupDivisions.trim()}`);
  return parts.join(',');
}

export interface FormResult {
  spec: SpecInput | null; // null when any field is invalid
  errors: FieldErrors;
}

// Spec paths (as checkSpec names them) back to the form field that set them.
const PATH_TO_FIELD: Record<string, FieldName> = {
  'model.in': 'in',
  'model.hidden': 'hidden',
  'model.out': 'out',
  'model.dim': 'dim',
  'model.depth': 'depth',
  batch: 'batch',
  iterations: 'iterations',
  accum: 'accum',
  'checkpoint.every': 'every',
  checkpoint: 'every',
  precision: 'precision',
  optimizer: 'optimizer',
  mode: 'mode',
  loss: 'loss',
  alloc_conf: 'maxSplitMb',
  device: 'device',
  capacity: 'capacity',
};

export function formToSpec(f: FormState): FormResult {
  const errors: FieldErrors = {};
  const int = (field: FieldName, text: string): number | undefined => {
    if (!INT.test(text)) {
      errors[field] = text.trim() === '' ? 'required' : `"${text}" is not a whole number`;
      return undefined;
    }
    return Number(text);
  };
  const model: Record<string, unknown> = { kind: f.modelKind, depth: int('depth', f.depth) };
  if (f.modelKind === 'mlp') {
    model.in = int('in', f.in);
    model.hidden = int('hidden', f.hidden);
    model.out = int('out', f.out);
  } else model.dim = int('dim', f.dim);

  if (f.maxSplitMb.trim()) {
    if (!INT.test(f.maxSplitMb)) errors.maxSplitMb = `"${f.maxSplitMb}" is not a whole number of MiB`;
    else if (Number(f.maxSplitMb) < 20) errors.maxSplitMb = `too small: must be >= 20 MiB (a large segment), got ${Number(f.maxSplitMb)}`;
  }
  if (f.gcThreshold.trim()) {
    const v = Number(f.gcThreshold);
    if (!NUM.test(f.gcThreshold) || !(v > 0 && v < 1)) errors.gcThreshold = `must be a fraction strictly between 0 and 1, got "${f.gcThreshold}"`;
  }
  if (f.roundupDivisions.trim()) {
    const v = Number(f.roundupDivisions);
    if (!INT.test(f.roundupDivisions) || (v !== 0 && (v & (v - 1)) !== 0) || v > 64)
      errors.roundupDivisions = `must be a power of 2 up to 64 (or 0 to turn rounding off), got "${f.roundupDivisions}"`;
  }
  let capacity: number | null = null;
  if (f.capacity.trim()) {
    const bytes = parseSize(f.capacity);
    if (bytes === null) errors.capacity = `"${f.capacity}" is not a size: use a number with MiB, GiB, MB, GB…`;
    else capacity = bytes;
  }

  const spec: SpecInput = {
    model: model as SpecInput['model'],
    batch: int('batch', f.batch),
    iterations: int('iterations', f.iterations),
    accum: int('accum', f.accum),
    checkpoint: f.checkpoint === 'every' ? { every: int('every', f.every) ?? 1 } : f.checkpoint,
    precision: f.precision,
    optimizer: f.optimizer,
    mode: f.mode,
    loss: f.loss,
    alloc_conf: allocConf(f),
    device: f.device,
    capacity,
    history: f.history,
  };
  // Let the contract judge ranges and cross-field rules; keep the first reason per field.
  const checked = checkSpec(spec);
  if (!checked.ok) {
    for (const issue of checked.issues) {
      const path = issue.startsWith('model.kind') ? 'model.kind' : issue.slice(0, issue.indexOf(':'));
      const field = PATH_TO_FIELD[path];
      const reason = issue.slice(issue.indexOf(':') + 1).trim();
      if (field && !errors[field]) errors[field] = reason;
      else if (!field && !errors.device) errors.device = issue;
    }
  }
  return { spec: Object.keys(errors).length ? null : spec, errors };
}

/** The form for a spec already run (so a run from history can be edited and run again). */
export function specToForm(spec: SpecInput): FormState {
  const f = defaultForm();
  const m = (spec.model ?? {}) as Record<string, unknown>;
  if (m.kind === 'residual') {
    f.modelKind = 'residual';
    f.depth = String(m.depth ?? 20);
    f.dim = String(m.dim ?? 512);
  } else {
    f.depth = String(m.depth ?? 2);
    f.in = String(m.in ?? 1024);
    f.hidden = String(m.hidden ?? 2048);
    f.out = String(m.out ?? 10);
  }
  if (spec.batch !== undefined) f.batch = String(spec.batch);
  if (spec.iterations !== undefined) f.iterations = String(spec.iterations);
  if (spec.accum !== undefined) f.accum = String(spec.accum);
  const c = spec.checkpoint;
  if (c && typeof c === 'object') {
    f.checkpoint = 'every';
    f.every = String(c.every);
  } else if (c) f.checkpoint = c;
  if (spec.precision) f.precision = spec.precision;
  const o = spec.optimizer;
  if (o) f.optimizer = typeof o === 'string' ? o : o.kind;
  if (spec.mode) f.mode = spec.mode;
  if (spec.loss) f.loss = spec.loss;
  if (spec.device) f.device = spec.device;
  if (spec.capacity !== undefined && spec.capacity !== null) f.capacity = String(spec.capacity);
  if (spec.history !== undefined) f.history = spec.history;
  for (const part of (spec.alloc_conf ?? '').split(',')) {
    const [k, v] = part.split(':');
    if (k === 'max_split_size_mb') f.maxSplitMb = v ?? '';
    if (k === 'expandable_segments') f.expandable = (v ?? '').toLowerCase() === 'true';
    if (k === 'garbage_collection_threshold') f.gcThreshold = v ?? '';
    if (k === 'roundup_power2_divisions') f.roundupDivisions = v ?? '';
  }
  return f;
}
