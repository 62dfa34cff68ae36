// Geometry of the active-memory timeline: where each point, band and tick goes on the
// canvas, and which band is under the pointer. Pure, so it is tested without a canvas.
import type { SnapTimeline, SnapTimelineAllocation } from '$contract/snapshot';

export interface Frame {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
  /** Event-index range on x (-1 is "before the trace"). */
  x0: number;
  x1: number;
  /** Bytes at the top of the plot. */
  yMax: number;
}

export const PAD = { left: 72, right: 22, top: 10, bottom: 30 };

/** `alsoShow`: byte levels the axis must reach besides the data (a memory cap drawn as a line). */
export function frameFor(t: SnapTimeline, width: number, height: number, alsoShow: number[] = []): Frame {
  const peak = Math.max(1, ...t.points.reserved, ...t.points.allocated, ...alsoShow);
  return {
    width,
    height,
    left: PAD.left,
    right: width - PAD.right,
    top: PAD.top,
    bottom: height - PAD.bottom,
    x0: -1,
    x1: Math.max(0, t.events - 1),
    yMax: niceMax(peak * 1.04),
  };
}

export const xOf = (f: Frame, eventIndex: number) => f.left + ((eventIndex - f.x0) / Math.max(1, f.x1 - f.x0)) * (f.right - f.left);
export const yOf = (f: Frame, bytes: number) => f.bottom - (bytes / f.yMax) * (f.bottom - f.top);
export const eventAtX = (f: Frame, x: number) => f.x0 + ((x - f.left) / Math.max(1, f.right - f.left)) * (f.x1 - f.x0);
export const bytesAtY = (f: Frame, y: number) => ((f.bottom - y) / Math.max(1, f.bottom - f.top)) * f.yMax;

/** A round number of bytes above `v` that splits into 4 round ticks of its binary unit. */
export function niceMax(v: number): number {
  if (v <= 0) return 1;
  const unit = 1024 ** Math.max(0, Math.floor(Math.log(v) / Math.log(1024)));
  const scaled = v / unit;
  const steps = [1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024];
  return (steps.find((s) => s >= scaled) ?? 1024) * unit;
}

/** Tick values for the byte axis: 4 even steps from 0 to yMax. */
export function byteTicks(yMax: number): number[] {
  return Array.from({ length: 5 }, (_, i) => (yMax / 4) * i);
}

/** The point index whose event is nearest `eventIndex`. */
export function nearestPoint(t: SnapTimeline, eventIndex: number): number {
  const ev = t.points.eventIndex;
  let lo = 0;
  let hi = ev.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ev[mid] < eventIndex) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs(ev[lo - 1] - eventIndex) <= Math.abs(ev[lo] - eventIndex)) return lo - 1;
  return lo;
}

export function aliveAt(a: SnapTimelineAllocation, p: number): boolean {
  return p >= a.first && p < a.first + a.offsets.length;
}

export type Band = { kind: 'allocation'; index: number; base: number } | { kind: 'other'; base: number } | { kind: 'free' };

/** What lies at `bytes` height at point p: one of the stacked allocations, the summed rest, or nothing. */
export function bandAt(t: SnapTimeline, p: number, bytes: number): Band {
  if (bytes < 0) return { kind: 'free' };
  if (bytes < t.other[p]) return { kind: 'other', base: 0 };
  for (let i = 0; i < t.allocations.length; i++) {
    const a = t.allocations[i];
    if (!aliveAt(a, p)) continue;
    const base = a.offsets[p - a.first];
    if (bytes >= base && bytes < base + a.size) return { kind: 'allocation', index: i, base };
  }
  return { kind: 'free' };
}

/** The allocations alive at point p, bottom to top. */
export function bandsAt(t: SnapTimeline, p: number): number[] {
  return t.allocations
    .map((a, i) => ({ a, i }))
    .filter(({ a }) => aliveAt(a, p))
    .sort((x, y) => x.a.offsets[p - x.a.first] - y.a.offsets[p - y.a.first])
    .map(({ i }) => i);
}

/** Outline of allocation `a` as canvas points: along its base, then back along its top. */
export function bandPolygon(t: SnapTimeline, f: Frame, a: SnapTimelineAllocation): Array<[number, number]> {
  const lower: Array<[number, number]> = [];
  const upper: Array<[number, number]> = [];
  a.offsets.forEach((off, k) => {
    const x = xOf(f, t.points.eventIndex[a.first + k]);
    lower.push([x, yOf(f, off)]);
    upper.push([x, yOf(f, off + a.size)]);
  });
  // A band alive at one point only still gets a sliver of width.
  if (a.offsets.length === 1) {
    lower.push([lower[0][0] + 1.5, lower[0][1]]);
    upper.push([upper[0][0] + 1.5, upper[0][1]]);
  }
  return [...lower, ...upper.reverse()];
}

/** PyTorch's viewer colours (d3's Tableau 10), one per allocation in turn. */
export const BAND_COLORS = ['#4e79a7', '#f28e2c', '#e15759', '#76b7b2', '#59a14f', '#edc949', '#af7aa1', '#ff9da7', '#9c755f', '#bab0ab'];
