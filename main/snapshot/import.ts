// Opening a snapshot: read the pickle safely, validate it into the typed model, and, for a
// trace that began after the process did (history enabled late, or the ring buffer
// wrapped), the memory state just before its first event (window_start.ts).
import { snapshotFromPickle } from './from_pickle';
import type { Frames, Snapshot } from './model';
import { streamSnapshotBuffer, streamSnapshotBufferSliced, streamSnapshotFile, type LoadOptions } from './stream_load';
import { windowStart, type WindowStart } from './window_start';
import { readPickleFile, type ReadOptions, type SliceOptions } from './pickle/reader';

export { SnapshotFormatError } from './from_pickle';
export { PickleError } from './pickle/errors';

/** Streams the file: trace events go straight into typed arrays (stream_load.ts). */
export function loadSnapshotFile(path: string, options?: LoadOptions): Snapshot {
  return streamSnapshotFile(path, options);
}

export function loadSnapshotBuffer(data: Uint8Array, options?: LoadOptions): Snapshot {
  return streamSnapshotBuffer(data, options);
}

/** As loadSnapshotBuffer, but the read yields to the event loop between slices (a server's uploads). */
export function loadSnapshotBufferSliced(data: Uint8Array, options?: LoadOptions & SliceOptions): Promise<Snapshot> {
  return streamSnapshotBufferSliced(data, options);
}

/** The plain read: the whole pickle decoded first, then converted (kept for comparison). */
export function loadSnapshotFileDecoded(path: string, options?: ReadOptions): Snapshot {
  return snapshotFromPickle(readPickleFile(path, options));
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

/** The state at the trace's start (window_start.ts), in the shape the views fold from. */
export function rebuildInitialState(s: Snapshot, device: number): InitialState {
  return initialStateOf(windowStart(s, device));
}

export function initialStateOf(w: WindowStart): InitialState {
  const segments: InitialSegment[] = w.segments.map((g) => ({ address: g.address, size: g.size, stream: g.stream }));
  const blocks: InitialBlock[] = [];
  for (const g of w.segments) {
    for (const b of g.blocks) {
      if (b.state === 'free') continue;
      blocks.push({
        address: b.address,
        requestedSize: b.requestedSize,
        size: b.size,
        stream: g.stream,
        frames: b.frames,
        freeRequested: b.state === 'pending_free',
      });
    }
  }
  return { device: w.device, segments, blocks, lateStart: w.lateStart };
}
