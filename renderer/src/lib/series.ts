// One run's memory timeline as the charts read it: columns of numbers that grow as
// progress batches arrive, kept as chart.js's normalized {x, y} points so the chart can
// skip parsing, plus the phase intervals, the peak and the OOM if there was one.

import { CATEGORIES, type Category, type MemorySample, type RunEvent } from '$contract/runs';

/** Legend labels by category id (the contract's and the engine's one spelling). */
const LABELS: Partial<Record<Category, string>> = {
  optimizer_state: 'optimizer state',
  mlp: 'MLP',
  logits: 'logits / loss',
  kv_cache: 'KV cache',
  gradients: 'parameter gradients',
};
export const categoryLabel = (c: Category): string => LABELS[c] ?? c.replace('_', ' ');

export interface Point {
  x: number;
  y: number;
}

export interface Phase {
  name: string; // forward | backward | optimizer_step | zero_grad | ...
  iteration: number;
  start: number; // x units (ms of run time)
  end: number; // NaN while open
}

export interface Oom {
  x: number;
  message: string; // PyTorch's message
  diagnosis: string;
}

/** One sample as it arrives from the host (see ingestProgress for the accepted shapes). */
export interface Sample {
  t: number; // ms
  allocated: number;
  reserved: number;
  active?: number;
  byCategory?: number[]; // CATEGORIES order
  op?: string;
  module?: string;
}

export class RunSeries {
  readonly allocated: Point[] = [];
  readonly reserved: Point[] = [];
  readonly active: Point[] = [];
  /** Bytes per category at each sample (x is allocated[i].x), for the stacked view; the last
   *  one is cached-free (reserved - allocated). Plain numbers, not points: 15 objects a sample
   *  were most of what a long live run left to the page's garbage collector. */
  readonly categories: number[][] = [...CATEGORIES, 'cached-free'].map(() => []);
  readonly ops: Array<string | undefined> = [];
  readonly modules: Array<string | undefined> = [];
  readonly phases: Phase[] = [];
  peak: { x: number; y: number; index: number } | null = null;
  /** Allocator trace (when the spec recorded history): the segment map replays it. */
  readonly allocEvents: Extract<RunEvent, { type: 'alloc' }>[] = [];
  /** Open "module" phases, innermost last, so each sample knows the module it ran in. */
  private moduleStack: string[] = [];
  /** The latest allocation's module and op: what the run was doing when a sample was taken. */
  private lastAlloc: Extract<RunEvent, { type: 'alloc' }> | null = null;
  private lastT = -Infinity;
  oom: Oom | null = null;
  capacity: number | null = null;
  /** Highest reserved so far: the y range, without scanning 100k points every frame. */
  maxReserved = 0;
  /** Bumped on every change, so views know to redraw. */
  version = 0;

  /** Empties the series (to refill it from a stored run); capacity stays. */
  reset(): void {
    for (const a of [this.allocated, this.reserved, this.active, ...this.categories, this.ops, this.modules, this.phases, this.allocEvents])
      a.length = 0;
    this.peak = null;
    this.moduleStack = [];
    this.lastAlloc = null;
    this.lastT = -Infinity;
    this.oom = null;
    this.maxReserved = 0;
    this.version++;
  }

  get length(): number {
    return this.allocated.length;
  }

  push(s: Sample): void {
    this.append(s.t, s.allocated, s.reserved, s.active ?? s.allocated, s.byCategory, s.module, s.op);
  }

  /** One sample's columns (no Sample object per sample: a live run ingests tens of thousands). */
  private append(
    x: number,
    allocated: number,
    reserved: number,
    active: number,
    cats: readonly number[] | undefined,
    module: string | undefined,
    op: string | undefined,
  ): void {
    this.allocated.push({ x, y: allocated });
    this.reserved.push({ x, y: reserved });
    this.active.push({ x, y: active });
    for (let c = 0; c < CATEGORIES.length; c++) this.categories[c].push(cats ? (cats[c] ?? 0) : 0);
    this.categories[CATEGORIES.length].push(Math.max(0, reserved - allocated));
    this.ops.push(op);
    this.modules.push(module);
    if (reserved > this.maxReserved) this.maxReserved = reserved;
    if (!this.peak || allocated > this.peak.y) this.peak = { x, y: allocated, index: this.allocated.length - 1 };
    this.version++;
  }

  /** Adds a batch as the host sends it (run.progress) or stores it (runs.get timeline + events). */
  ingest(samples: readonly MemorySample[], events: readonly RunEvent[]): void {
    // Markers and samples are each in time order; apply markers up to each sample's time.
    let e = 0;
    for (const s of samples) {
      while (e < events.length && events[e].t <= s.t) this.applyEvent(events[e++]);
      const module = this.moduleStack[this.moduleStack.length - 1] || this.lastAlloc?.module || undefined;
      // The op only belongs to this moment while the run is still in the module that made
      // it: a module entered since has not allocated yet.
      const op = (this.lastAlloc && (this.lastAlloc.module || undefined) === module && this.lastAlloc.op) || undefined;
      const t = Math.max(s.t, this.lastT);
      this.append(t, s.allocated, s.reserved, s.active ?? s.allocated, s.by, module, op);
      this.lastT = t;
    }
    while (e < events.length) this.applyEvent(events[e++]);
  }

  private applyEvent(ev: RunEvent): void {
    if (ev.type === 'alloc') {
      this.allocEvents.push(ev);
      // The allocator's context tags carry the op; runs stored before they were sent have none.
      if (ev.action === 'alloc') this.lastAlloc = ev;
      if (ev.action === 'oom' && !this.oom) this.oom = { x: ev.t, message: '', diagnosis: '' };
      return;
    }
    if (ev.name === 'module') {
      if (ev.edge === 'begin') this.moduleStack.push(ev.module);
      else this.moduleStack.pop();
      return;
    }
    if (!(ev.name in PHASE_COLORS)) return;
    if (ev.edge === 'begin') this.phaseBegin(ev.name, ev.t, ev.iteration);
    else this.phaseEnd(ev.name, ev.t);
  }

  phaseBegin(name: string, x: number, iteration = -1): void {
    this.phases.push({ name, iteration, start: x, end: Number.NaN });
    this.version++;
  }

  phaseEnd(name: string, x: number): void {
    for (let i = this.phases.length - 1; i >= 0; i--) {
      const p = this.phases[i];
      if (p.name === name && Number.isNaN(p.end)) {
        p.end = x;
        break;
      }
    }
    this.version++;
  }

  /** Index of the last sample at or before x (binary search: x only grows). */
  indexAt(x: number): number {
    const a = this.allocated;
    let lo = 0;
    let hi = a.length - 1;
    if (hi < 0) return -1;
    if (x <= a[0].x) return 0;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (a[mid].x <= x) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** What the run was doing at sample i, for the hover: "addmm · layers.0" (either part may be missing). */
  doingAt(i: number): string {
    return [this.ops[i], this.modules[i]].filter(Boolean).join(' · ');
  }

  lastX(): number {
    return this.allocated.length ? this.allocated[this.allocated.length - 1].x : 0;
  }
}

/** Phases worth a band on the chart, and their colours (light and dark both readable). */
export const PHASE_COLORS: Record<string, string> = {
  forward: 'rgba(59, 130, 246, 0.10)',
  backward: 'rgba(245, 158, 11, 0.12)',
  optimizer_step: 'rgba(16, 185, 129, 0.14)',
  zero_grad: 'rgba(148, 163, 184, 0.14)',
  prefill: 'rgba(236, 72, 153, 0.10)',
  decode: 'rgba(14, 165, 233, 0.10)',
};
