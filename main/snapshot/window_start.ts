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

/** Index of the segment holding addr, or -1. Segments are sorted by address. */
function findSegment(segs: StartSegment[], addr: number): number {
  let lo = 0;
  let hi = segs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const g = segs[mid];
    if (addr < g.address) hi = mid - 1;
    else if (addr >= g.address + g.size) lo = mid + 1;
    else return mid;
  }
  return -1;
}

/** Index of the block holding addr within its segment. */
function findBlock(blocks: StartBlock[], addr: number): number {
  let lo = 0;
  let hi = blocks.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const b = blocks[mid];
    if (addr < b.address) hi = mid - 1;
    else if (addr >= b.address + b.size) lo = mid + 1;
    else return mid;
  }
  return -1;
}

const NO_FRAMES: Frames = Object.freeze([]) as Frames;
const freeBlock = (address: number, size: number): StartBlock => ({ address, size, requestedSize: 0, state: 'free', frames: NO_FRAMES });

/** Free block i absorbs free neighbours, as the allocator's free_block merges them. */
function mergeAround(blocks: StartBlock[], i: number): void {
  const next = blocks[i + 1];
  if (next && next.state === 'free') {
    blocks[i].size += next.size;
    blocks.splice(i + 1, 1);
  }
  const prev = blocks[i - 1];
  if (prev && prev.state === 'free') {
    prev.size += blocks[i].size;
    blocks.splice(i, 1);
  }
}

export function windowStart(s: Snapshot, device: number): WindowStart {
  const settings = s.allocatorSettings;
  const maxSplit = settings?.maxSplitSize ?? Infinity;
  const segs: StartSegment[] = s.segments
    .filter((g) => g.device === device)
    .map((g) => ({
      address: g.address,
      size: g.totalSize,
      stream: g.stream,
      pool: g.segmentType,
      expandable: g.isExpandable,
      blocks: g.blocks.length
        ? g.blocks.map((b) => ({
            address: b.address,
            size: b.size,
            requestedSize: b.state === 'inactive' ? 0 : b.requestedSize,
            state: (b.state === 'inactive' ? 'free' : b.state === 'active_pending_free' ? 'pending_free' : 'allocated') as StartBlockState,
            frames: b.frames,
          }))
        : [freeBlock(g.address, g.totalSize)],
    }))
    .sort((a, b) => a.address - b.address);
  const problems: string[] = [];
  const problem = (i: number, e: TraceEvent, what: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`event ${i} (${e.action} at 0x${e.addr.toString(16)}): ${what}`);
  };

  const events = s.deviceTraces[device] ?? [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    switch (e.action) {
      case 'alloc': {
        const gi = findSegment(segs, e.addr);
        const bi = gi < 0 ? -1 : findBlock(segs[gi].blocks, e.addr);
        const b = bi < 0 ? undefined : segs[gi].blocks[bi];
        if (!b || b.address !== e.addr || b.state === 'free') {
          problem(i, e, 'no live block there to undo');
          break;
        }
        b.state = 'free';
        b.requestedSize = 0;
        b.frames = NO_FRAMES;
        mergeAround(segs[gi].blocks, bi);
        break;
      }
      case 'free_requested': {
        const gi = findSegment(segs, e.addr);
        const bi = gi < 0 ? -1 : findBlock(segs[gi].blocks, e.addr);
        const b = bi < 0 ? undefined : segs[gi].blocks[bi];
        if (b && b.address === e.addr && b.state !== 'free') b.state = 'allocated';
        else problem(i, e, 'no live block there');
        break;
      }
      case 'free_completed':
        unfree(segs, e, i, roundSize(e.size, settings), maxSplit, settings?.other, problem);
        break;
      case 'segment_alloc': {
        const gi = segs.findIndex((g) => g.address === e.addr);
        if (gi < 0) {
          problem(i, e, 'no such segment');
          break;
        }
        if (segs[gi].blocks.length !== 1 || segs[gi].blocks[0].state !== 'free') problem(i, e, 'segment still holds blocks');
        segs.splice(gi, 1);
        break;
      }
      case 'segment_free': {
        if (findSegment(segs, e.addr) >= 0 || findSegment(segs, e.addr + e.size - 1) >= 0) {
          problem(i, e, 'overlaps a live segment');
          break;
        }
        const g: StartSegment = {
          address: e.addr,
          size: e.size,
          stream: e.stream,
          pool: e.size === SMALL_SEGMENT ? 'small' : 'large',
          expandable: false,
          blocks: [freeBlock(e.addr, e.size)],
        };
        segs.splice(insertionPoint(segs, e.addr), 0, g);
        break;
      }
      case 'segment_map':
        unmapRange(segs, e, i, problem);
        break;
      case 'segment_unmap':
        mapRange(segs, e);
        break;
      default:
        break;
    }
  }
  const lateStart = segs.length > 0;
  return { device, segments: segs, lateStart, problems };
}

function insertionPoint(segs: StartSegment[], addr: number): number {
  let lo = 0;
  let hi = segs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (segs[mid].address < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Undo a free_completed: cut the block back out of the free block it merged into. */
function unfree(
  segs: StartSegment[],
  e: TraceEvent,
  i: number,
  rounded: number,
  maxSplit: number,
  other: SnapshotAllocatorSettings['other'] | undefined,
  problem: (i: number, e: TraceEvent, what: string) => void,
): void {
  const gi = findSegment(segs, e.addr);
  const g = gi < 0 ? undefined : segs[gi];
  const bi = g ? findBlock(g.blocks, e.addr) : -1;
  const f = bi < 0 ? undefined : g!.blocks[bi];
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
  const parts: StartBlock[] = [];
  if (e.addr > f.address) parts.push(freeBlock(f.address, e.addr - f.address));
  parts.push({ address: e.addr, size, requestedSize: e.size, state: 'pending_free', frames: e.frames });
  if (e.addr + size < end) parts.push(freeBlock(e.addr + size, end - e.addr - size));
  g.blocks.splice(bi, 1, ...parts);
}

/** Undo a segment_unmap: the range was mapped (free) before; join touching ranges. */
function mapRange(segs: StartSegment[], e: TraceEvent): void {
  const at = insertionPoint(segs, e.addr);
  const g: StartSegment = {
    address: e.addr,
    size: e.size,
    stream: e.stream,
    pool: e.size < SMALL_SEGMENT || segs[at - 1]?.pool === 'small' ? 'small' : 'large',
    expandable: true,
    blocks: [freeBlock(e.addr, e.size)],
  };
  segs.splice(at, 0, g);
  const next = segs[at + 1];
  if (next && next.expandable && g.address + g.size === next.address && next.stream === g.stream) {
    g.size += next.size;
    g.blocks.push(...next.blocks);
    mergeAround(g.blocks, 0);
    segs.splice(at + 1, 1);
  }
  const prev = segs[at - 1];
  if (prev && prev.expandable && prev.address + prev.size === g.address && prev.stream === g.stream) {
    const k = prev.blocks.length;
    prev.size += g.size;
    prev.blocks.push(...g.blocks);
    mergeAround(prev.blocks, k);
    segs.splice(at, 1);
  }
}

/** Undo a segment_map: cut the (free) range out of the expandable segment holding it. */
function unmapRange(segs: StartSegment[], e: TraceEvent, i: number, problem: (i: number, e: TraceEvent, what: string) => void): void {
  const gi = findSegment(segs, e.addr);
  const g = gi < 0 ? undefined : segs[gi];
  const end = e.addr + e.size;
  if (!g || end > g.address + g.size) {
    problem(i, e, 'no mapped range there');
    return;
  }
  const before = g.blocks.filter((b) => b.address + b.size <= e.addr);
  const after = g.blocks.filter((b) => b.address >= end);
  const cut = g.blocks.filter((b) => b.address < end && b.address + b.size > e.addr);
  if (cut.some((b) => b.state !== 'free')) problem(i, e, 'range still holds blocks');
  // Free blocks straddling the cut keep their outside parts.
  const first = cut[0];
  const last = cut[cut.length - 1];
  if (first && first.address < e.addr) before.push(freeBlock(first.address, e.addr - first.address));
  if (last && last.address + last.size > end) after.unshift(freeBlock(end, last.address + last.size - end));
  const pieces: StartSegment[] = [];
  if (before.length) pieces.push({ ...g, size: e.addr - g.address, blocks: before });
  if (after.length) pieces.push({ ...g, address: end, size: g.address + g.size - end, blocks: after });
  segs.splice(gi, 1, ...pieces);
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
