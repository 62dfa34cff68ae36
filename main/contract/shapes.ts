// Per-iteration shapes: a training run whose batches vary, as real ones do. A spec gives
// them as an explicit list, one iteration each, or as a draw: sequence lengths taken
// from a range or a length histogram with a seed, the way a data loader would hand them
// out. A draw is expanded here and only here (shapeSteps), so the engine always reads
// the explicit list and the same spec always gives the same batches.

export interface ShapeStep {
  batch: number;
  seq: number;
}

/** Lengths uniform over [min, max], or drawn with the histogram's weights. */
export type SeqDraw = { min: number; max: number } | { histogram: [number, number][] };

export const SHAPE_ORDERS = ['drawn', 'longest_first'] as const;
export type ShapeOrder = (typeof SHAPE_ORDERS)[number];

export interface ShapeDraw {
  batch: number;
  steps: number;
  seed: number;
  seq: SeqDraw;
  /** Each length rounded up to a multiple of this (bucketed padding; 1: none), at most model.seq. */
  pad_to: number;
  /** "longest_first": the steps sorted by length, longest first (the cache is sized at step 0). */
  order: ShapeOrder;
}

export type Shapes = ShapeStep[] | ShapeDraw;

export const isDraw = (s: Shapes | null | undefined): s is ShapeDraw => !!s && !Array.isArray(s);

/** The iterations a shapes value makes. */
export const shapeCount = (s: Shapes): number => (isDraw(s) ? s.steps : s.length);

/** The longest sequence a draw can produce before padding. */
export function drawMaxSeq(d: ShapeDraw): number {
  return 'min' in d.seq ? d.seq.max : Math.max(...d.seq.histogram.map(([len]) => len));
}

/** Rounded up to the bucket, never past the model's sequence length. */
export const padded = (len: number, padTo: number, modelSeq: number) => Math.min(modelSeq, Math.ceil(len / padTo) * padTo);

/** The explicit per-iteration list (a draw expanded deterministically from its seed). */
export function shapeSteps(s: Shapes, modelSeq: number): ShapeStep[] {
  if (!isDraw(s)) return s;
  const next = mulberry32(s.seed);
  const pick = seqPicker(s.seq, next);
  const steps = Array.from({ length: s.steps }, () => ({ batch: s.batch, seq: padded(pick(), s.pad_to, modelSeq) }));
  if (s.order === 'longest_first') steps.sort((a, b) => b.seq - a.seq);
  return steps;
}

/** The histogram's total weight; the spec refuses a non-finite one (every draw would pick the first length). */
export function histogramTotal(h: readonly (readonly [unknown, number])[]): number {
  let total = 0;
  for (const [, w] of h) total += w;
  return total;
}

function seqPicker(d: SeqDraw, next: () => number): () => number {
  if ('min' in d) return () => d.min + Math.floor(next() * (d.max - d.min + 1));
  const total = histogramTotal(d.histogram);
  if (!Number.isFinite(total) || total <= 0) throw new RangeError(`histogram weights must sum to a positive finite number (got ${total})`);
  return () => {
    let r = next() * total;
    for (const [len, w] of d.histogram) if ((r -= w) < 0) return len;
    return d.histogram[d.histogram.length - 1][0];
  };
}

/** A small, well-mixed 32-bit generator: the same seed gives the same lengths everywhere. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One line: "8x128 4x256" for a list; "b8 x 200 steps, seq 64..1024, seed 0, pad 1, drawn" for a draw. */
export function describeShapes(s: Shapes): string {
  if (!isDraw(s)) return s.map((x) => `${x.batch}x${x.seq}`).join(' ');
  const seq = 'min' in s.seq ? `${s.seq.min}..${s.seq.max}` : `histogram ${s.seq.histogram.map(([l, w]) => `${l}:${w}`).join(' ')}`;
  return `b${s.batch} x ${s.steps} steps, seq ${seq}, seed ${s.seed}, pad ${s.pad_to}, ${s.order}`;
}
