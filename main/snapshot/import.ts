// Opening a snapshot: read the pickle safely, validate it into the typed model, and, for a
// trace that began after the process did (history enabled late, or the ring buffer
// wrapped), rebuild the memory state just before its first event. The rebuild walks the
// trace backwards from the final segments exactly as PyTorch's MemoryViz.js does
// (simulate_memory): undo each segment_alloc/map, redo each segment_free/unmap, drop each
// alloc, restore each freed block.
import { snapshotFromPickle } from './from_pickle';
import type { Frames, Snapshot, TraceEvent } from './model';
import { readPickle, readPickleFile, type ReadOptions } from './pickle/reader';

export { SnapshotFormatError } from './from_pickle';
export { PickleError } from './pickle/errors';

export function loadSnapshotFile(path: string, options?: ReadOptions): Snapshot {
  return snapshotFromPickle(readPickleFile(path, options));
}

export function loadSnapshotBuffer(data: Uint8Array, options?: ReadOptions): Snapshot {
  return snapshotFromPickle(readPickle(data, options));
}

/** A segment (or mapped range of an expandable one) alive before the trace's first event. */
export interface InitialSegment {
  address: number;
  size: number;
  stream: number;
}

/** An allocation alive before the trace's first event. */
export interface InitialBlock {
  address: number;
  /** Bytes requested (what a replay must allocate again). */
  requestedSize: number;
  /** Block size when known from the final segments; requestedSize otherwise. */
  size: number;
  stream: number;
  frames: Frames;
  /** free_requested had happened but free_completed had not (record_stream). */
  freeRequested: boolean;
}

export interface InitialState {
  device: number;
  segments: InitialSegment[];
  blocks: InitialBlock[];
  /** True when anything was alive before the first event: the trace started late. */
  lateStart: boolean;
}

/** Devices that have a trace or segments, in index order. */
export function snapshotDevices(s: Snapshot): number[] {
  const set = new Set<number>();
  s.deviceTraces.forEach((t, i) => t.length && set.add(i));
  for (const g of s.segments) set.add(g.device);
  return [...set].sort((a, b) => a - b);
}

/** The device with the most trace events (the one a replay uses by default). */
export function busiestDevice(s: Snapshot): number {
  let best = 0;
  s.deviceTraces.forEach((t, i) => {
    if (t.length > (s.deviceTraces[best]?.length ?? 0)) best = i;
  });
  if (!s.deviceTraces[best]?.length && s.segments.length) return s.segments[0].device;
  return best;
}

export function rebuildInitialState(s: Snapshot, device: number): InitialState {
  const segs: InitialSegment[] = s.segments
    .filter((g) => g.device === device)
    .map((g) => ({ address: g.address, size: g.totalSize, stream: g.stream }))
    .sort((a, b) => a.address - b.address);

  const blocks = new Map<number, InitialBlock>();
  for (const g of s.segments) {
    if (g.device !== device) continue;
    for (const b of g.blocks) {
      if (b.state === 'inactive') continue;
      blocks.set(b.address, {
        address: b.address,
        requestedSize: b.requestedSize,
        size: b.size,
        stream: g.stream,
        frames: b.frames,
        freeRequested: b.state === 'active_pending_free',
      });
    }
  }

  const events: TraceEvent[] = s.deviceTraces[device] ?? [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    switch (e.action) {
      case 'alloc':
        blocks.delete(e.addr);
        break;
      case 'free_requested': {
        const b = blocks.get(e.addr);
        if (b) b.freeRequested = false;
        break;
      }
      case 'free_completed':
        blocks.set(e.addr, {
          address: e.addr,
          requestedSize: e.size,
          size: e.size,
          stream: e.stream,
          frames: e.frames,
          freeRequested: true,
        });
        break;
      case 'segment_free':
      case 'segment_unmap':
        mapRange(segs, { address: e.addr, size: e.size, stream: e.stream }, e.action === 'segment_unmap');
        break;
      case 'segment_alloc':
      case 'segment_map':
        unmapRange(segs, e.addr, e.size, e.action === 'segment_map');
        break;
      default:
        break;
    }
  }
  const blockList = [...blocks.values()].sort((a, b) => a.address - b.address);
  return { device, segments: segs, blocks: blockList, lateStart: segs.length > 0 || blockList.length > 0 };
}

/** Insert a segment by address; for expandable mappings, merge with touching neighbours. */
function mapRange(segs: InitialSegment[], seg: InitialSegment, merge: boolean): void {
  let idx = segs.findIndex((x) => x.address > seg.address);
  if (idx < 0) idx = segs.length;
  segs.splice(idx, 0, seg);
  if (!merge) return;
  const next = segs[idx + 1];
  if (next && seg.address + seg.size === next.address && seg.stream === next.stream) {
    seg.size += next.size;
    segs.splice(idx + 1, 1);
  }
  const prev = segs[idx - 1];
  if (prev && prev.address + prev.size === seg.address && prev.stream === seg.stream) {
    prev.size += seg.size;
    segs.splice(idx, 1);
  }
}

/** Remove a segment; for expandable mappings, cut the range out of the segment holding it. */
function unmapRange(segs: InitialSegment[], address: number, size: number, split: boolean): void {
  if (!split) {
    const i = segs.findIndex((x) => x.address === address);
    if (i >= 0) segs.splice(i, 1);
    return;
  }
  const end = address + size;
  const i = segs.findIndex((x) => x.address <= address && end <= x.address + x.size);
  if (i < 0) return; // inconsistent trace: nothing to cut
  const s = segs[i];
  const sEnd = s.address + s.size;
  if (s.address === address) {
    s.address += size;
    s.size -= size;
    if (s.size === 0) segs.splice(i, 1);
  } else if (sEnd === end) {
    s.size -= size;
  } else {
    s.size = address - s.address;
    segs.splice(i + 1, 0, { address: end, size: sEnd - end, stream: s.stream });
  }
}
