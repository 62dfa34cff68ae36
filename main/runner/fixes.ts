// What-if for training on varying lengths. Reserved memory creeps as new sequence lengths
// arrive (each new size can need a new segment while the old ones stay cached), and a job
// can run out of memory hours in. The usual fixes, each a variant of the spec, run on the
// same device (a few at once, pool.ts) so their reserved peaks and OOMs sit side by side.
import { randomBytes } from 'node:crypto';
import type { FixesResult, FixRow } from '../contract/runs';
import { engineSpec, parseSpec, SpecError, type ShapeStep, type Spec } from '../contract/spec';
import { isDraw, padded, shapeSteps } from '../contract/shapes';
import { withAllocConfItem } from '../contract/alloc_conf';
import { modelDims } from '../contract/catalogue';
import type { NativeJob } from '../addon/types';
import type { RunManager, StartedRun } from './manager';
import { runPool } from './pool';

/** Bucket width for padding and the empty_cache() cadence the variants use. */
export const PAD_BUCKET = 128;
export const EMPTY_CACHE_EVERY = 10;

interface Fix {
  id: string;
  label: string;
  /** The variant spec (completed, then validated again). */
  apply(spec: Spec, steps: ShapeStep[], modelSeq: number): Spec;
}

const withSteps = (spec: Spec, steps: ShapeStep[]): Spec => ({ ...spec, shapes: steps, iterations: steps.length });

export const LENGTH_FIXES: readonly Fix[] = [
  { id: 'none', label: 'As is', apply: (s) => s },
  {
    id: 'pad_buckets',
    label: `Pad to multiples of ${PAD_BUCKET} tokens`,
    apply: (s, steps, seq) => {
      const bucket = Math.min(PAD_BUCKET, seq);
      if (isDraw(s.shapes)) return { ...s, shapes: { ...s.shapes, pad_to: Math.max(s.shapes.pad_to, bucket) } };
      return withSteps(
        s,
        steps.map((x) => ({ batch: x.batch, seq: padded(x.seq, bucket, seq) })),
      );
    },
  },
  {
    id: 'longest_first',
    label: 'Longest batch first',
    apply: (s, steps) =>
      isDraw(s.shapes)
        ? { ...s, shapes: { ...s.shapes, order: 'longest_first' } }
        : withSteps(
            s,
            [...steps].sort((a, b) => b.seq - a.seq),
          ),
  },
  {
    id: 'pack',
    label: 'Pack into full-length rows',
    apply: (s, steps) => {
      // The same tokens cut into rows of the longest length: one shape for every step.
      const rows = Math.max(...steps.map((x) => x.batch));
      const len = Math.max(...steps.map((x) => x.seq));
      const n = Math.max(1, Math.ceil(tokensOf(steps) / (rows * len)));
      return withSteps(
        s,
        Array.from({ length: n }, () => ({ batch: rows, seq: len })),
      );
    },
  },
  {
    id: 'expandable_segments',
    label: 'expandable_segments:True',
    apply: (s) => ({ ...s, alloc_conf: withAllocConfItem(s.alloc_conf, 'expandable_segments', 'True') }),
  },
  {
    id: 'empty_cache',
    label: `empty_cache() every ${EMPTY_CACHE_EVERY} steps`,
    apply: (s) => ({ ...s, empty_cache_every: EMPTY_CACHE_EVERY }),
  },
];

const tokensOf = (steps: readonly ShapeStep[]) => steps.reduce((a, x) => a + x.batch * x.seq, 0);

/** The variants of a spec with per-iteration shapes, validated before any runs. */
export function lengthFixSpecs(input: unknown): { fix: Fix; spec: Spec; steps: ShapeStep[] }[] {
  const spec = parseSpec(input);
  if (!spec.shapes)
    throw new SpecError(['shapes: the fixes compare runs whose sequence lengths vary: give per-iteration shapes or a draw']);
  const seq = modelDims(spec.model).seq ?? 1;
  const steps = engineSpec(spec).shapes as ShapeStep[];
  return LENGTH_FIXES.map((fix) => {
    try {
      const variant = parseSpec(fix.apply(spec, steps, seq));
      return { fix, spec: variant, steps: engineSpec(variant).shapes as ShapeStep[] };
    } catch (err) {
      if (err instanceof SpecError) throw new SpecError(err.issues.map((m) => `fix "${fix.id}": ${m}`));
      throw err;
    }
  });
}

export interface FixesOptions {
  onRunStarted?: (run: StartedRun, index: number) => void;
  signal?: { cancelled: boolean };
  /** Aborting it gives up a run still waiting for a slot (the client went away). */
  abort?: AbortSignal;
  jobFor?: (spec: Spec) => NativeJob;
  /** Runs at once (default pool.ts DEFAULT_PARALLEL). */
  parallel?: number;
  /** Each fix's row as its run ends: `done` of `total` finished. */
  onRow?: (row: FixRow, index: number, done: number, total: number) => void;
}

export async function runFixes(manager: RunManager, input: unknown, opts: FixesOptions = {}): Promise<FixesResult> {
  const variants = lengthFixSpecs(input);
  // Tokens the data holds: the lengths as drawn, before any padding.
  const base = variants[0].spec;
  const real = isDraw(base.shapes)
    ? tokensOf(shapeSteps({ ...base.shapes, pad_to: 1 }, modelDims(base.model).seq ?? 1))
    : tokensOf(variants[0].steps);
  const fixesId = `fixes-${randomBytes(4).toString('hex')}`;
  let stopped = false;
  const rows = await runPool(
    variants,
    async ({ fix, spec, steps }, index): Promise<FixRow> => {
      const run = await manager.start(spec, {
        job: opts.jobFor?.(spec),
        signal: opts.abort,
        group: { kind: 'fixes', id: fixesId, index, param: 'fix', value: fix.id },
        name: `fix: ${fix.label}`,
      });
      opts.onRunStarted?.(run, index);
      const meta = await run.done;
      if (meta.status === 'cancelled') stopped = true;
      const s = meta.summary;
      const tokens = tokensOf(steps);
      return {
        fix: fix.id,
        label: fix.label,
        runId: meta.id,
        status: meta.status,
        steps: steps.length,
        tokens,
        padding: Math.max(0, tokens - real),
        peak_allocated: s?.peak_allocated ?? 0,
        peak_reserved: s?.peak_reserved ?? 0,
        reserved_end: s?.readings.reserved_end ?? null,
        device_allocs: s?.readings.num_device_alloc ?? null,
        oom_iteration: s?.oom ? s.oom.iteration : null,
      };
    },
    {
      limit: opts.parallel,
      stop: () => stopped || !!opts.signal?.cancelled,
      onResult: (row, i, done) => opts.onRow?.(row, i, done, variants.length),
    },
  );
  const card = manager.card(base.device);
  return {
    fixesId,
    capacity: base.capacity ?? card.total,
    total: card.total,
    context: card.context,
    rows: rows.filter((r): r is FixRow => r !== undefined),
  };
}
