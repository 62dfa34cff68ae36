// The allocator's exact state just before a trace's first event. A trace may begin after
// the process did (history switched on after the model was loaded) or lose its oldest
// events to the ring buffer (max_entries). The snapshot's `segments` are the state at dump
// time, block for block; walking the trace backwards and undoing each event gives the
// state at the window's start: segments at their real addresses and sizes, split into the
// free and allocated blocks they held, in their pools. A replay seeds the allocator with
// it (native/allocator/seed.cpp) instead of re-allocating the live blocks, which would
// place them differently and count device allocations PyTorch never made in the window.
//
// The trace records what callers requested, not block sizes. Undoing a free therefore
// cuts the block back out of the free space it merged into at the requested size rounded
// the way the allocator rounds (round_size). A block can be larger than that: PyTorch
// leaves a large-pool remainder of 1 MiB or less inside the block, and never splits
// oversize blocks. Every large-pool block is over 1 MiB, so a tail of at most 1 MiB can
// only be part of the block; a longer tail is taken to be a separate free block.
import { ALLOCATOR_CONSTANTS } from '../contract/allocator';
import type { Frames, Snapshot, SnapshotAllocatorSettings, TraceEvent } from './model';
import { eventCursor } from './compact_trace';
import { OrderedMap } from './ordered_map';

const { minBlockSize: MIN_BLOCK, smallSize: SMALL_SIZE, smallBuffer: SMALL_SEGMENT, largeBuffer: LARGE_BUFFER } = ALLOCATOR_CONSTANTS;

export type StartBlockState = 'allocated' | 'pending_free' | 'free';

export interface StartBlock {
  address: number;
  size: number;
  /** Bytes requested (0 for free blocks). */
  requestedSize: number;
  state: StartBlockState;
  frames: Frames;
}

export interface StartSegment {
  address: number;
  size: number;
  stream: number;
  pool: 'small' | 'large';
  expandable: boolean;
  /** In address order, tiling the segment. */
  blocks: StartBlock[];
}

export interface WindowStart {
  device: number;
  segments: StartSegment[];
  /** Anything was alive before the first event: history began late or the ring buffer wrapped. */
  lateStart: boolean;
  /** Events the walk could not undo consistently (a damaged or inconsistent trace). */
  problems: string[];
}

const MAX_PROBLEMS = 20;

/** PyTorch's round_size under the snapshot's roundup_power2_divisions. */
export function roundSize(size: number, settings: SnapshotAllocatorSettings | null): number {
  if (size < MIN_BLOCK) return MIN_BLOCK;
  const table = settings?.roundupPower2Divisions;
  if (table) {
    const log = Math.floor(Math.log2(size));
    const divisions = table[Math.min(Math.max(log - 20, 0), table.length - 1)] ?? 0;
    if (divisions > 1 && size > MIN_BLOCK * divisions) {
      const floor = 2 ** log;
      if (floor === size) return size;
      const step = floor / 2 ** Math.floor(Math.log2(divisions));
      if (step < 1) return floor * 2;
      const rounded = size - (size % step);
      return rounded === size ? size : rounded + step;
    }
  }
  return Math.ceil(size / MIN_BLOCK) * MIN_BLOCK;
}

const NO_FRAMES: Frames = Object.freeze([]) as Frames;
const freeBlock = (address: number, size: number): StartBlock => ({ address, size, requestedSize: 0, state: 'free', frames: NO_FRAMES });

/** A segment while the walk runs; its blocks live in the walk's one block map. */
type Seg = Omit<StartSegment, 'blocks'>;

type Problem = (i: number, e: TraceEvent, what: string) => void;

/**
 * The allocator state during the backward walk: segments and blocks each in an ordered map
 * by address (blocks of all segments in one map: segments never overlap), so every undo is
 * O(log n) and splitting or joining a segment moves no blocks.
 */
class Walk {
  readonly segs = new OrderedMap<Seg>();
  readonly blocks = new OrderedMap<StartBlock>();

  /** The segment holding addr. */
  segAt(addr: number): Seg | undefined {
    const g = this.segs.floor(addr);
    return g && addr < g.address + g.size ? g : undefined;
  }

  /** The block of g holding addr. */
  blockAt(g: Seg, addr: number): StartBlock | undefined {
    const b = this.blocks.floor(addr);
    return b && b.address >= g.address && addr < b.address + b.size ? b : undefined;
  }

  addSegment(g: Seg, blocks: StartBlock[]): void {
    this.segs.set(g.address, g);
    for (const b of blocks) this.blocks.set(b.address, b);
  }

  /** Free block b absorbs free neighbours in its segment, as the allocator's free_block merges them. */
  mergeAround(g: Seg, b: StartBlock): void {
    const next = this.blocks.after(b.address);
    if (next && next.address < g.address + g.size && next.state === 'free') {
      b.size += next.size;
      this.blocks.delete(next.address);
    }
    const prev = this.blocks.before(b.address);
    if (prev && prev.address >= g.address && prev.state === 'free') {
      prev.size += b.size;
      this.blocks.delete(b.address);
    }
  }

  /** Removes the blocks that start in [from, to); returns them in order. */
  takeBlocks(from: number, to: number): StartBlock[] {
    const out: StartBlock[] = [];
    let cur = this.blocks.get(from) ?? this.blocks.after(from);
    while (cur && cur.address < to) {
      out.push(cur);
      const next = this.blocks.after(cur.address);
      this.blocks.delete(cur.address);
      cur = next;
    }
    return out;
  }
}

export function windowStart(s: Snapshot, device: number): WindowStart {
  const steps = walkSteps(s, device);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/** The same walk with the event loop turning every few milliseconds: serve opens a large
 *  snapshot without holding up its other clients. */
export async function windowStartSliced(s: Snapshot, device: number, sliceMs = 20): Promise<WindowStart> {
  const steps = walkSteps(s, device);
  let t = Date.now();
  let r = steps.next();
  while (!r.done) {
    if (Date.now() - t >= sliceMs) {
      await new Promise((resolve) => setImmediate(resolve));
      t = Date.now();
    }
    r = steps.next();
  }
  return r.value;
}

/** Events undone between two chances to yield. */
const WALK_SLICE = 4096;

function* walkSteps(s: Snapshot, device: number): Generator<void, WindowStart> {
  const settings = s.allocatorSettings;
  const maxSplit = settings?.maxSplitSize ?? Infinity;
  const w = new Walk();
  for (const g of s.segments) {
    if (g.device !== device) continue;
    w.addSegment(
      { address: g.address, size: g.totalSize, stream: g.stream, pool: g.segmentType, expandable: g.isExpandable },
      g.blocks.length
        ? g.blocks.map((b) => ({
            address: b.address,
            size: b.size,
            requestedSize: b.state === 'inactive' ? 0 : b.requestedSize,
            state: (b.state === 'inactive' ? 'free' : b.state === 'active_pending_free' ? 'pending_free' : 'allocated') as StartBlockState,
            frames: b.frames,
          }))
        : [freeBlock(g.address, g.totalSize)],
    );
  }
  const problems: string[] = [];
  const problem: Problem = (i, e, what) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`event ${i} (${e.action} at 0x${e.addr.toString(16)}): ${what}`);
  };

  const events = s.deviceTraces[device] ?? [];
  // The walk keeps no event, only fields and stacks: one event object refilled for each.
  const at = eventCursor(events);
  for (let i = events.length - 1; i >= 0; i--) {
    if (i % WALK_SLICE === 0) yield;
    const e = at(i);
    switch (e.action) {
      case 'alloc': {
        const g = w.segAt(e.addr);
        const b = g && w.blockAt(g, e.addr);
        if (!g || !b || b.address !== e.addr || b.state === 'free') {
          problem(i, e, 'no live block there to undo');
          break;
        }
        b.state = 'free';
        b.requestedSize = 0;
        b.frames = NO_FRAMES;
        w.mergeAround(g, b);
        break;
      }
      case 'free_requested': {
        const g = w.segAt(e.addr);
        const b = g && w.blockAt(g, e.addr);
        if (b && b.address === e.addr && b.state !== 'free') b.state = 'allocated';
        else problem(i, e, 'no live block there');
        break;
      }
      case 'free_completed':
        unfree(w, e, i, roundSize(e.size, settings), maxSplit, settings?.other, problem);
        break;
      case 'segment_alloc': {
        const g = w.segs.get(e.addr);
        if (!g) {
          problem(i, e, 'no such segment');
          break;
        }
        const inside = w.takeBlocks(g.address, g.address + g.size);
        if (inside.length !== 1 || inside[0].state !== 'free') problem(i, e, 'segment still holds blocks');
        w.segs.delete(g.address);
        break;
      }
      case 'segment_free': {
        if (w.segAt(e.addr) || w.segAt(e.addr + e.size - 1)) {
          problem(i, e, 'overlaps a live segment');
          break;
        }
        w.addSegment(
          { address: e.addr, size: e.size, stream: e.stream, pool: e.size === SMALL_SEGMENT ? 'small' : 'large', expandable: false },
          [freeBlock(e.addr, e.size)],
        );
        break;
      }
      case 'segment_map':
        unmapRange(w, e, i, problem);
        break;
      case 'segment_unmap':
        mapRange(w, e);
        break;
      default:
        break;
    }
  }
  // Both maps in address order, walked together: each segment takes the blocks inside it.
  const segments: StartSegment[] = [];
  const blocks = w.blocks.values();
  let b = blocks.next();
  for (const g of w.segs.values()) {
    const seg: StartSegment = { ...g, blocks: [] };
    while (!b.done && b.value.address < g.address) b = blocks.next();
    while (!b.done && b.value.address < g.address + g.size) {
      seg.blocks.push(b.value);
      b = blocks.next();
    }
    segments.push(seg);
  }
  return { device, segments, lateStart: segments.length > 0, problems };
}

/** Undo a free_completed: cut the block back out of the free block it merged into. */
function unfree(
  w: Walk,
  e: TraceEvent,
  i: number,
  rounded: number,
  maxSplit: number,
  other: SnapshotAllocatorSettings['other'] | undefined,
  problem: Problem,
): void {
  const g = w.segAt(e.addr);
  const f = g && w.blockAt(g, e.addr);
  if (!g || !f || f.state !== 'free') {
    problem(i, e, 'no free block there to take the allocation back from');
    return;
  }
  const end = f.address + f.size;
  let size = rounded;
  const tail = end - (e.addr + rounded);
  if (tail < 0) {
    problem(i, e, 'the free block there is smaller than the allocation');
    size = end - e.addr;
  } else if (tail > 0 && g.pool === 'large' && !g.expandable) {
    // A remainder the allocator would not have split off stayed part of the block.
    const oversize = rounded >= maxSplit;
    const nonSplit =
      typeof other?.get('max_non_split_rounding_size') === 'number' ? (other.get('max_non_split_rounding_size') as number) : LARGE_BUFFER;
    if (tail <= SMALL_SIZE || (oversize && tail < nonSplit)) size = end - e.addr;
  }
  // f keeps its key: it becomes the free head before the allocation, or the allocation
  // itself (changed in place: no removal and reinsertion in the map).
  if (e.addr > f.address) {
    f.size = e.addr - f.address;
    w.blocks.set(e.addr, { address: e.addr, size, requestedSize: e.size, state: 'pending_free', frames: e.frames });
  } else {
    f.size = size;
    f.requestedSize = e.size;
    f.state = 'pending_free';
    f.frames = e.frames;
  }
  if (e.addr + size < end) w.blocks.set(e.addr + size, freeBlock(e.addr + size, end - e.addr - size));
}

/** Undo a segment_unmap: the range was mapped (free) before; join touching ranges. */
function mapRange(w: Walk, e: TraceEvent): void {
  const prev = w.segs.before(e.addr);
  const g: Seg = {
    address: e.addr,
    size: e.size,
    stream: e.stream,
    pool: e.size < SMALL_SEGMENT || prev?.pool === 'small' ? 'small' : 'large',
    expandable: true,
  };
  const b = freeBlock(e.addr, e.size);
  w.addSegment(g, [b]);
  let joined = g;
  const next = w.segs.after(e.addr);
  if (next && next.expandable && g.address + g.size === next.address && next.stream === g.stream) {
    g.size += next.size;
    w.segs.delete(next.address);
  }
  if (prev && prev.expandable && prev.address + prev.size === g.address && prev.stream === g.stream) {
    prev.size += g.size;
    w.segs.delete(g.address);
    joined = prev;
  }
  w.mergeAround(joined, b);
}

/** Undo a segment_map: cut the (free) range out of the expandable segment holding it. */
function unmapRange(w: Walk, e: TraceEvent, i: number, problem: Problem): void {
  const g = w.segAt(e.addr);
  const end = e.addr + e.size;
  if (!g || end > g.address + g.size) {
    problem(i, e, 'no mapped range there');
    return;
  }
  const gEnd = g.address + g.size;
  // The blocks overlapping the range: the one holding its start, then those starting in it.
  const first = w.blockAt(g, e.addr);
  const cut = w.takeBlocks(first ? first.address : e.addr, end);
  if (cut.some((b) => b.state !== 'free')) problem(i, e, 'range still holds blocks');
  // Free blocks straddling the cut keep their outside parts.
  const head = cut[0];
  const last = cut[cut.length - 1];
  if (head && head.address < e.addr) w.blocks.set(head.address, freeBlock(head.address, e.addr - head.address));
  if (last && last.address + last.size > end) w.blocks.set(end, freeBlock(end, last.address + last.size - end));
  w.segs.delete(g.address);
  if (e.addr > g.address) w.segs.set(g.address, { ...g, size: e.addr - g.address });
  if (end < gEnd) w.segs.set(end, { ...g, address: end, size: gEnd - end });
}

/** Bytes reserved and allocated (block sizes) in a start state. */
export function startTotals(w: WindowStart): {
  reserved: number;
  allocated: number;
  requested: number;
  segments: number;
  allocations: number;
} {
  let reserved = 0;
  let allocated = 0;
  let requested = 0;
  let allocations = 0;
  for (const g of w.segments) {
    reserved += g.size;
    for (const b of g.blocks) {
      if (b.state === 'free') continue;
      allocated += b.size;
      requested += b.requestedSize;
      allocations++;
    }
  }
  return { reserved, allocated, requested, segments: w.segments.length, allocations };
}
