// The allocator's segments and blocks at any event of a snapshot's trace: the state before
// the trace (main/snapshot/window_start.ts) carried forward by the trace fold, as MemoryViz's
// "Allocator State History" does. The trace records what callers requested, not block
// sizes, so each block is sized the way the allocator would have cut it: requests rounded
// up to 512 bytes, and in the large pool a remainder of 1 MiB or less left inside the
// block (PyTorch only splits off more than kSmallSize). At the trace's end this gives the
// snapshot's own recorded blocks.
import type { SnapBlockState, SnapSegmentState, SnapStateAt } from '../contract/snapshot';
import { foldTrace } from '../snapshot/fold';
import { ALLOCATOR_CONSTANTS } from '../contract/allocator';
import { windowStart, type WindowStart } from '../snapshot/window_start';
import type { Frames, Snapshot } from '../snapshot/model';
import { shortFrames, StackTable } from './snapshot_stacks';

// kSmallSize: the small pool's requests, and the large pool's split threshold; kSmallBuffer: every small-pool segment.
const { minBlockSize: MIN_BLOCK, smallSize: SMALL_SIZE, smallBuffer: SMALL_SEGMENT } = ALLOCATOR_CONSTANTS;

interface Seg {
  address: number;
  size: number;
  stream: number;
}

interface Live {
  address: number;
  requested: number;
  allocIndex: number;
  pending: boolean;
  frames: Frames;
}

export function roundRequest(size: number): number {
  return size < MIN_BLOCK ? MIN_BLOCK : Math.ceil(size / MIN_BLOCK) * MIN_BLOCK;
}

/** `start` is windowStart(s, device), passed in when the caller keeps it. */
export function stateAt(
  s: Snapshot,
  device: number,
  eventIndex: number,
  start: WindowStart = windowStart(s, device),
): Omit<SnapStateAt, 'id'> {
  const events = s.deviceTraces[device] ?? [];
  if (eventIndex >= events.length)
    throw new Error(`event ${eventIndex} is past the trace's end: it has ${events.length} events (0-${events.length - 1})`);
  // Live allocations come from the one fold over the trace; segments are tracked beside it.
  const segs: Seg[] = start.segments.map((g) => ({ address: g.address, size: g.size, stream: g.stream }));
  const r = foldTrace(
    s,
    device,
    {
      event(_i, e) {
        if (e.action === 'segment_alloc') insertSeg(segs, { address: e.addr, size: e.size, stream: e.stream }, false);
        else if (e.action === 'segment_map') insertSeg(segs, { address: e.addr, size: e.size, stream: e.stream }, true);
        else if (e.action === 'segment_free') removeSeg(segs, e.addr, e.size, false);
        else if (e.action === 'segment_unmap') removeSeg(segs, e.addr, e.size, true);
      },
    },
    { start, until: eventIndex },
  );
  const live = new Map<number, Live>();
  for (const a of r.live.values())
    live.set(a.address, { address: a.address, requested: a.size, allocIndex: a.allocIndex, pending: a.freeRequested, frames: a.frames });

  // Pools as the snapshot's final segments name them, else by size.
  const finalType = new Map<number, 'small' | 'large'>();
  for (const g of s.segments) if (g.device === device) finalType.set(g.address, g.segmentType);
  const stacks = new StackTable(3);
  const blocks = [...live.values()].sort((a, b) => a.address - b.address);
  let bi = 0;
  let allocated = 0;
  let inactiveSplit = 0;
  let cachedFree = 0;
  let largestFree = 0;
  const out: SnapSegmentState[] = [];
  for (const g of segs) {
    const end = g.address + g.size;
    while (bi < blocks.length && blocks[bi].address < g.address) bi++; // outside every segment: a damaged trace
    const inside: Live[] = [];
    while (bi < blocks.length && blocks[bi].address < end) inside.push(blocks[bi++]);
    const pool = finalType.get(g.address) ?? (g.size === SMALL_SEGMENT ? 'small' : 'large');
    const list: SnapBlockState[] = [];
    let at = g.address;
    let segAllocated = 0;
    const free = (from: number, to: number) => {
      if (to <= from) return;
      list.push({ address: from, size: to - from, requested: 0, state: 'free', allocIndex: null, stack: null });
      largestFree = Math.max(largestFree, to - from);
    };
    inside.forEach((b, j) => {
      free(at, b.address);
      const next = j + 1 < inside.length ? inside[j + 1].address : end;
      let span = Math.min(roundRequest(b.requested), next - b.address);
      if (pool === 'large' && next - (b.address + span) <= SMALL_SIZE) span = next - b.address;
      list.push({
        address: b.address,
        size: span,
        requested: b.requested,
        state: b.pending ? 'pending_free' : 'allocated',
        allocIndex: b.allocIndex,
        stack: b.frames.length ? stacks.ref(b.frames) : null,
      });
      segAllocated += b.requested;
      at = b.address + span;
    });
    free(at, end);
    const freeBytes = list.reduce((a, b) => a + (b.state === 'free' ? b.size : 0), 0);
    if (inside.length) inactiveSplit += freeBytes;
    else cachedFree += g.size;
    allocated += segAllocated;
    out.push({ address: g.address, size: g.size, stream: g.stream, pool, allocated: segAllocated, blocks: list });
  }

  const e = eventIndex >= 0 ? events[eventIndex] : null;
  return {
    device,
    eventIndex,
    events: events.length,
    event: e
      ? { index: eventIndex, action: e.action, address: e.addr, size: e.size, timeUs: e.timeUs, frames: shortFrames(e.frames) }
      : null,
    reserved: segs.reduce((a, g) => a + g.size, 0),
    allocated,
    inactiveSplit,
    cachedFree,
    largestFree,
    segments: out,
    stacks: stacks.stacks,
  };
}

/** Adds a segment in address order; a mapped range joins the expandable segment it touches. */
function insertSeg(segs: Seg[], seg: Seg, merge: boolean): void {
  let i = segs.findIndex((x) => x.address > seg.address);
  if (i < 0) i = segs.length;
  segs.splice(i, 0, seg);
  if (!merge) return;
  const next = segs[i + 1];
  if (next && seg.address + seg.size === next.address && next.stream === seg.stream) {
    seg.size += next.size;
    segs.splice(i + 1, 1);
  }
  const prev = segs[i - 1];
  if (prev && prev.address + prev.size === seg.address && prev.stream === seg.stream) {
    prev.size += seg.size;
    segs.splice(i, 1);
  }
}

/** Drops a segment; an unmapped range is cut out of the expandable segment holding it. */
function removeSeg(segs: Seg[], address: number, size: number, cut: boolean): void {
  if (!cut) {
    const i = segs.findIndex((x) => x.address === address);
    if (i >= 0) segs.splice(i, 1);
    return;
  }
  const end = address + size;
  const i = segs.findIndex((x) => x.address <= address && end <= x.address + x.size);
  if (i < 0) return;
  const g = segs[i];
  const gEnd = g.address + g.size;
  if (g.address === address && gEnd === end) segs.splice(i, 1);
  else if (g.address === address) {
    g.address = end;
    g.size = gEnd - end;
  } else if (gEnd === end) g.size = address - g.address;
  else {
    g.size = address - g.address;
    segs.splice(i + 1, 0, { address: end, size: gEnd - end, stream: g.stream });
  }
}
