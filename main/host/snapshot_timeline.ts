// The active-memory timeline of a snapshot, as PyTorch's MemoryViz draws it: every live
// allocation a band, stacked in allocation order, so a free lets the bands above it drop.
// Decimated here, on the host: the trace is cut into at most maxPoints-1 buckets and each
// bucket is shown at the moment its allocated bytes peaked, so no peak is lost and every
// point is a real, consistent state. Only the largest allocations get their own band; the
// rest are summed into one band at the bottom.
import type { SnapTimeline } from '../contract/snapshot';
import { foldTrace } from '../snapshot/fold';
import type { Frames, Snapshot } from '../snapshot/model';
import { StackTable } from './snapshot_stacks';

interface Instance {
  size: number;
  allocIndex: number;
  freeIndex: number | null;
  frames: Frames;
}

export function buildTimeline(s: Snapshot, device: number, maxPoints = 800, maxAllocations = 80): Omit<SnapTimeline, 'id'> {
  const events = s.deviceTraces[device] ?? [];
  const n = events.length;

  // Pass 1: allocation instances (indexed by the fold's dense id) and the totals after every event.
  const insts: Instance[] = [];
  const allocAt = new Float64Array(n);
  const reservedAt = new Float64Array(n);
  const allocInst = new Int32Array(n).fill(-1);
  const freeInst = new Int32Array(n).fill(-1);
  const r = foldTrace(s, device, {
    alloc(a, i) {
      insts[a.id] = { size: a.size, allocIndex: a.allocIndex, freeIndex: null, frames: a.frames };
      if (i >= 0) allocInst[i] = a.id;
    },
    free(a, i) {
      insts[a.id].freeIndex = i;
      freeInst[i] = a.id;
    },
    event(i, _e, t) {
      allocAt[i] = t.allocated;
      reservedAt[i] = t.reserved;
    },
  });
  const initialInsts = r.initial.blocks.length;
  const initial = r.initialTotals;

  // The sampled moments: the initial state, then each bucket's allocated peak.
  const points: SnapTimeline['points'] = {
    eventIndex: [-1],
    timeUs: [n ? events[0].timeUs : 0],
    allocated: [initial.allocated],
    reserved: [initial.reserved],
  };
  const bucket = Math.max(1, Math.ceil(n / Math.max(1, maxPoints - 1)));
  for (let lo = 0; lo < n; lo += bucket) {
    const hi = Math.min(n, lo + bucket);
    let at = lo;
    let res = reservedAt[lo];
    for (let i = lo + 1; i < hi; i++) {
      // An OOM changes no totals: on a tie it is the point shown, so the timeline has its event.
      if (allocAt[i] > allocAt[at] || (allocAt[i] === allocAt[at] && events[i].action === 'oom')) at = i;
      if (reservedAt[i] > res) res = reservedAt[i];
    }
    points.eventIndex.push(at);
    points.timeUs.push(events[at].timeUs);
    points.allocated.push(allocAt[at]);
    points.reserved.push(res);
  }

  // The largest allocations get bands of their own.
  const order = insts.map((_, k) => k).sort((a, b) => insts[b].size - insts[a].size || insts[a].allocIndex - insts[b].allocIndex);
  const chosen = new Set(order.slice(0, maxAllocations));

  // Pass 2: walk again, stacking the chosen live allocations at each sampled moment.
  const live: number[] = [];
  for (let k = 0; k < initialInsts; k++) if (chosen.has(k)) live.push(k);
  const first = new Map<number, number>();
  const offsets = new Map<number, number[]>();
  const other: number[] = [];
  const record = (p: number) => {
    let base = points.allocated[p];
    for (const k of live) base -= insts[k].size;
    other.push(base);
    for (const k of live) {
      if (!first.has(k)) {
        first.set(k, p);
        offsets.set(k, []);
      }
      offsets.get(k)!.push(base);
      base += insts[k].size;
    }
  };
  record(0);
  let p = 1;
  for (let i = 0; i < n && p < points.eventIndex.length; i++) {
    const freed = freeInst[i];
    if (freed >= 0 && chosen.has(freed)) live.splice(live.indexOf(freed), 1);
    const made = allocInst[i];
    if (made >= 0 && chosen.has(made)) live.push(made);
    if (points.eventIndex[p] === i) record(p++);
  }

  const stacks = new StackTable();
  const allocations = [...first.keys()]
    .sort((a, b) => insts[a].allocIndex - insts[b].allocIndex || a - b)
    .map((k) => ({
      size: insts[k].size,
      allocIndex: insts[k].allocIndex,
      freeIndex: insts[k].freeIndex,
      first: first.get(k)!,
      offsets: offsets.get(k)!,
      stack: stacks.ref(insts[k].frames),
    }));
  return { device, events: n, points, other, allocations, stacks: stacks.stacks };
}
