// The allocator's segments and blocks at any moment of a run, rebuilt by replaying the
// run's allocator trace up to that time (as PyTorch's memory viewer rebuilds its
// "allocator state" from a snapshot's trace). Pure: the segment map only draws the result.
import { ALLOCATOR_CONSTANTS } from '$contract/allocator';
import type { AllocatorEvent } from '$contract/runs';

export interface MapBlock {
  addr: number;
  size: number;
  allocated: boolean;
  category: string; // '' for free blocks
  module: string;
  op?: string; // engine op that allocated it, when known
  requested?: number; // bytes asked for (allocated blocks); the block may be larger
}

export interface MapSegment {
  addr: number;
  size: number;
  pool: 'small' | 'large';
  blocks: MapBlock[]; // address order, covering the whole segment (free gaps included)
  allocated: number;
}

export interface SegmentState {
  t: number;
  segments: MapSegment[];
  reserved: number;
  allocated: number;
  /** Free bytes inside segments that also hold allocated blocks: cached, but only reusable by requests that fit. */
  inactiveSplit: number;
  /** Free bytes in segments with nothing allocated (empty_cache would return these). */
  cachedFree: number;
  largestFree: number;
}

// The small pool's segments are exactly 2 MiB; the allocator rounds every request up to 512 B.
const { smallBuffer: SMALL_SEGMENT, minBlockSize: MIN_BLOCK } = ALLOCATOR_CONSTANTS;

/** The smallest block the allocator could hand out for `requested` bytes. */
function blockFor(requested: number): number {
  return Math.max(MIN_BLOCK, Math.ceil(requested / MIN_BLOCK) * MIN_BLOCK);
}

/** Replays trace events (time order) with t <= time. */
export function segmentsAt(events: readonly AllocatorEvent[], time: number): SegmentState {
  return new SegmentReplay().advance(events, time);
}

/**
 * The replay kept between calls, for a view that follows a live run's end: each call applies
 * only the events that arrived since the last one (replaying the whole trace on every
 * progress batch cost a live run's view O(events) per frame). A trace that shrank or a time
 * that went back starts it over.
 */
export class SegmentReplay {
  private segs = new Map<number, { size: number; blocks: Map<number, MapBlock> }>();
  private order: number[] | null = null;
  private source: readonly AllocatorEvent[] | null = null;
  private applied = 0;
  private time = -Infinity;
  private cached: SegmentState | null = null;

  /** The state after every event with t <= time. */
  advance(events: readonly AllocatorEvent[], time: number): SegmentState {
    if (events !== this.source || events.length < this.applied || time < this.time) this.restart(events);
    this.time = time;
    let changed = false;
    while (this.applied < events.length && events[this.applied].t <= time) {
      this.apply(events[this.applied++]);
      changed = true;
    }
    if (changed || !this.cached) this.cached = this.state(time);
    else if (this.cached.t !== time) this.cached = { ...this.cached, t: time };
    return this.cached;
  }

  private restart(events: readonly AllocatorEvent[]): void {
    this.segs = new Map();
    this.order = null;
    this.source = events;
    this.applied = 0;
    this.cached = null;
  }

  private findSegment(addr: number): number | undefined {
    const segs = this.segs;
    const order = (this.order ??= [...segs.keys()].sort((a, b) => a - b));
    let lo = 0;
    let hi = order.length - 1;
    let found: number | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (order[mid] <= addr) {
        found = order[mid];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found === undefined) return undefined;
    return addr < found + segs.get(found)!.size ? found : undefined;
  }

  private apply(e: AllocatorEvent): void {
    const segs = this.segs;
    switch (e.action) {
      case 'segment_alloc':
      case 'segment_map': {
        // An expandable segment growing right after its mapped end extends that range.
        const prev = e.action === 'segment_map' ? this.findSegment(e.addr - 1) : undefined;
        if (prev !== undefined) segs.get(prev)!.size += e.size;
        else segs.set(e.addr, { size: e.size, blocks: new Map() });
        this.order = null;
        break;
      }
      case 'segment_free':
      case 'segment_unmap': {
        const s = this.findSegment(e.addr);
        if (s === undefined) break;
        const seg = segs.get(s)!;
        if (s === e.addr && e.size >= seg.size) segs.delete(s);
        else if (e.addr + e.size >= s + seg.size) seg.size = e.addr - s; // unmapped the tail
        this.order = null;
        break;
      }
      case 'alloc': {
        const s = this.findSegment(e.addr);
        if (s === undefined) break;
        // Trace sizes are the requested bytes (as in PyTorch's trace); the allocator's block
        // (blockSize) also holds any remainder too small to split off. Runs stored before
        // it was sent fall back to the request rounded up to 512 B.
        const size = e.blockSize ?? blockFor(e.size);
        segs
          .get(s)!
          .blocks.set(e.addr, { addr: e.addr, size, allocated: true, category: e.category, module: e.module, op: e.op, requested: e.size });
        break;
      }
      case 'free':
      case 'free_completed': {
        const s = this.findSegment(e.addr);
        if (s !== undefined) segs.get(s)!.blocks.delete(e.addr);
        break;
      }
    }
  }

  private state(time: number): SegmentState {
    const segs = this.segs;
    const sortedAddrs = () => [...segs.keys()].sort((a, b) => a - b);
    let reserved = 0;
    let allocated = 0;
    let inactiveSplit = 0;
    let cachedFree = 0;
    let largestFree = 0;
    const segments: MapSegment[] = [];
    for (const addr of sortedAddrs()) {
      const seg = segs.get(addr)!;
      const blocks: MapBlock[] = [];
      let cursor = addr;
      let used = 0;
      const live = [...seg.blocks.values()].sort((a, b) => a.addr - b.addr);
      const gap = (to: number) => {
        if (to > cursor) {
          blocks.push({ addr: cursor, size: to - cursor, allocated: false, category: '', module: '' });
          largestFree = Math.max(largestFree, to - cursor);
        }
      };
      for (const b of live) {
        gap(b.addr);
        blocks.push(b);
        used += b.size;
        cursor = Math.max(cursor, b.addr + b.size);
      }
      gap(addr + seg.size);
      reserved += seg.size;
      allocated += used;
      if (used > 0) inactiveSplit += seg.size - used;
      else cachedFree += seg.size;
      segments.push({ addr, size: seg.size, pool: seg.size === SMALL_SEGMENT ? 'small' : 'large', blocks, allocated: used });
    }
    return { t: time, segments, reserved, allocated, inactiveSplit, cachedFree, largestFree };
  }
}

/** The allocator's own snapshot (playground, snapshot import) as a segment map state. */
export function fromSnapshot(segments: readonly import('$contract/playground').SnapshotSegment[]): SegmentState {
  let reserved = 0;
  let allocated = 0;
  let inactiveSplit = 0;
  let cachedFree = 0;
  let largestFree = 0;
  const out: MapSegment[] = segments.map((s) => {
    const blocks: MapBlock[] = s.blocks.map((b) => {
      const isAlloc = b.state === 'active_allocated' || b.state === 'active_pending_free';
      if (!isAlloc) largestFree = Math.max(largestFree, b.size);
      // Contexts are "category|op|module" tags.
      const [category = '', op = '', module = ''] = (b.context ?? '').split('|');
      return {
        addr: b.address,
        size: b.size,
        allocated: isAlloc,
        category: isAlloc ? category : '',
        module,
        op: isAlloc && op ? op : undefined,
        requested: isAlloc ? b.requestedSize : undefined,
      };
    });
    reserved += s.totalSize;
    allocated += s.allocatedSize;
    if (s.allocatedSize > 0) inactiveSplit += s.totalSize - s.allocatedSize;
    else cachedFree += s.totalSize;
    return { addr: s.address, size: s.totalSize, pool: s.pool, blocks, allocated: s.allocatedSize };
  });
  return { t: 0, segments: out, reserved, allocated, inactiveSplit, cachedFree, largestFree };
}
