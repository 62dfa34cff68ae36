// Any vramlab run or replay as a PyTorch memory snapshot: build the typed snapshot from a
// trace (plus the final segment map when the source has one), then pickle it in PyTorch's
// layout so `python -m torch.cuda._memory_viz trace_plot` and pytorch.org/memory_viz load it.
//
// Seams: the run store calls `exportRunRecord(record)`; a replay calls `buildSnapshot` with
// its history and final segments. Both end in `snapshotToBytes`.
import type { NativeHistoryEvent } from '../addon/types';
import { parseAllocConf } from '../contract/alloc_conf';
import { ALLOCATOR_CONSTANTS } from '../contract/allocator';
import type { HistoryKept, RunRecord } from '../contract/runs';
import type { Frame, Frames, Snapshot, SnapshotAllocatorSettings, SnapshotBlock, SnapshotSegment, TraceAction, TraceEvent } from './model';
import { writePickle } from './pickle/writer';
import { snapshotToPickle } from './to_pickle';
import type { PickleValue } from './pickle/values';
import { REPLAY_ALLOC, REPLAY_OOM_ATTEMPT, type ReplayTrace } from './to_replay';

/** The small-pool segment size (the only segments of exactly this size are small) and the
 *  multiple every request is rounded up to. */
const { smallBuffer: SMALL_SEGMENT, minBlockSize: MIN_BLOCK } = ALLOCATOR_CONSTANTS;

export interface ExportEvent {
  action: TraceAction;
  addr: number;
  /** Requested bytes for alloc/free events, segment or range bytes for segment events. */
  size: number;
  /** alloc only: the allocator's block size, when the source knows it (vramlab runs do). */
  blockSize?: number;
  stream?: number;
  timeUs?: number;
  frames?: Frames;
  /** oom only. */
  deviceFree?: number;
}

export interface ExportBlock {
  address: number;
  size: number;
  requestedSize: number;
  allocated: boolean;
  frames?: Frames;
}

export interface ExportSegment {
  address: number;
  totalSize: number;
  stream?: number;
  isLarge?: boolean;
  isExpandable?: boolean;
  frames?: Frames;
  /** Must tile the segment in address order when given. */
  blocks?: ExportBlock[];
}

export interface ExportAnnotation {
  stage: 'START' | 'END';
  name: string;
  timeUs: number;
}

export interface ExportInput {
  device?: number;
  /** The trace, oldest first. free_completed without a preceding free_requested gets one. */
  events: ExportEvent[];
  /** The final segment map; derived from the trace when omitted. */
  segments?: ExportSegment[];
  /** PYTORCH_CUDA_ALLOC_CONF the run used. */
  allocConf?: string;
  annotations?: ExportAnnotation[];
  /**
   * Wall-clock µs since the Unix epoch that event time 0 stands for. Event times are
   * modelled offsets; PyTorch's viewer reads time_us as epoch time, so without a base
   * every axis starts on 1 January 1970.
   */
  timeBaseUs?: number;
  /** What the source kept of its history: a cut one is marked in the pickle ("vramlab_history"). */
  history?: HistoryKept;
}

export function buildSnapshot(input: ExportInput): Snapshot {
  const device = input.device ?? 0;
  const blockSizes = new Map<TraceEvent, number>();
  const base = Math.round(input.timeBaseUs ?? 0);
  const traced = input.events.map((e) => {
    const t = toTraceEvent(e, base);
    if (e.action === 'alloc' && e.blockSize) blockSizes.set(t, e.blockSize);
    return t;
  });
  const events = withFreeRequests(traced);
  const segments = input.segments ? input.segments.map((g) => toSegment(g, device)) : deriveSegments(events, device, blockSizes);
  const deviceTraces: TraceEvent[][] = Array.from({ length: device + 1 }, () => []);
  deviceTraces[device] = events;
  const other = new Map<string, PickleValue>();
  if (input.annotations?.length) {
    other.set(
      'external_annotations',
      input.annotations.map(
        (a) =>
          new Map<string, PickleValue>([
            ['stage', a.stage],
            ['name', a.name],
            ['device', device],
            ['time_us', base + Math.round(a.timeUs)],
          ]),
      ),
    );
  }
  if (input.history && input.history.kept < input.history.recorded) {
    // PyTorch's readers ignore keys they do not know; ours says the trace is not the whole run.
    other.set(
      'vramlab_history',
      new Map<string, PickleValue>([
        ['recorded', input.history.recorded],
        ['kept', input.history.kept],
        ['truncated', input.history.truncated],
      ]),
    );
  }
  return { segments, deviceTraces, allocatorSettings: settingsFromAllocConf(input.allocConf ?? ''), addressBase: 0n, other };
}

/** The pickle bytes of a snapshot, in PyTorch's layout, safe opcodes only. */
export function snapshotToBytes(s: Snapshot): Buffer {
  return writePickle(snapshotToPickle(s), { protocol: 4 });
}

const NO_FRAMES: Frames = Object.freeze([]) as Frames;

function toTraceEvent(e: ExportEvent, base: number): TraceEvent {
  const t: TraceEvent = {
    action: e.action,
    addr: e.action === 'oom' ? 0 : e.addr,
    size: e.size,
    stream: e.stream ?? 0,
    timeUs: base + Math.round(e.timeUs ?? 0),
    frames: e.frames ?? NO_FRAMES,
  };
  if (e.action === 'oom') t.deviceFree = e.deviceFree ?? 0;
  return t;
}

/** PyTorch always records free_requested before free_completed; its viewer pairs them. */
function withFreeRequests(events: TraceEvent[]): TraceEvent[] {
  const out: TraceEvent[] = [];
  const requested = new Set<number>();
  for (const e of events) {
    if (e.action === 'free_requested') requested.add(e.addr);
    if (e.action === 'free_completed') {
      if (!requested.has(e.addr)) out.push({ ...e, action: 'free_requested' });
      requested.delete(e.addr);
    }
    out.push(e);
  }
  return out;
}

function toSegment(g: ExportSegment, device: number): SnapshotSegment {
  const blocks: SnapshotBlock[] = g.blocks?.length
    ? g.blocks.map((b) => ({
        address: b.address,
        size: b.size,
        requestedSize: b.allocated ? b.requestedSize : 0,
        state: b.allocated ? 'active_allocated' : 'inactive',
        frames: b.frames ?? NO_FRAMES,
      }))
    : [{ address: g.address, size: g.totalSize, requestedSize: 0, state: 'inactive', frames: NO_FRAMES }];
  let at = g.address;
  for (const b of blocks) {
    if (b.address !== at) throw new Error(`export: blocks of segment ${g.address} do not tile it (gap or overlap at ${at})`);
    at += b.size;
  }
  if (at !== g.address + g.totalSize)
    throw new Error(`export: blocks of segment ${g.address} cover ${at - g.address} of ${g.totalSize} bytes`);
  return segmentFrom(
    device,
    g.address,
    g.totalSize,
    g.stream ?? 0,
    g.isLarge ?? g.totalSize !== SMALL_SEGMENT,
    g.isExpandable ?? false,
    g.frames ?? NO_FRAMES,
    blocks,
  );
}

function segmentFrom(
  device: number,
  address: number,
  totalSize: number,
  stream: number,
  isLarge: boolean,
  isExpandable: boolean,
  frames: Frames,
  blocks: SnapshotBlock[],
): SnapshotSegment {
  const active = blocks.filter((b) => b.state !== 'inactive');
  return {
    device,
    address,
    totalSize,
    allocatedSize: blocks.filter((b) => b.state === 'active_allocated').reduce((n, b) => n + b.size, 0),
    activeSize: active.reduce((n, b) => n + b.size, 0),
    requestedSize: active.reduce((n, b) => n + b.requestedSize, 0),
    stream,
    segmentType: isLarge ? 'large' : 'small',
    segmentPoolId: [0, 0],
    isExpandable,
    frames,
    blocks,
  };
}

/**
 * The final segment map implied by a complete trace: segments still allocated, each tiled
 * by the allocations still live in it and free gaps. Block sizes come from `blockSizes` when
 * the source recorded them; otherwise requests are rounded to 512 bytes as the allocator does
 * (a block that took a whole unsplit remainder then shows a little smaller).
 */
export function deriveSegments(
  events: readonly TraceEvent[],
  device: number,
  blockSizes?: ReadonlyMap<TraceEvent, number>,
): SnapshotSegment[] {
  type Seg = { address: number; size: number; stream: number; frames: Frames; expandable: boolean };
  const segs = new Map<number, Seg>();
  const live = new Map<number, { size: number; block?: number; frames: Frames }>();
  for (const e of events) {
    switch (e.action) {
      case 'segment_alloc':
        segs.set(e.addr, { address: e.addr, size: e.size, stream: e.stream, frames: e.frames, expandable: false });
        break;
      case 'segment_free':
        segs.delete(e.addr);
        break;
      case 'segment_map': {
        // Expandable segments grow at their end: extend the mapping that ends here.
        const prev = [...segs.values()].find((s) => s.expandable && s.address + s.size === e.addr);
        if (prev) prev.size += e.size;
        else segs.set(e.addr, { address: e.addr, size: e.size, stream: e.stream, frames: e.frames, expandable: true });
        break;
      }
      case 'segment_unmap': {
        const s = [...segs.values()].find((x) => x.address <= e.addr && e.addr + e.size <= x.address + x.size);
        if (!s) break;
        const end = e.addr + e.size;
        const sEnd = s.address + s.size;
        segs.delete(s.address);
        if (e.addr > s.address) segs.set(s.address, { ...s, size: e.addr - s.address });
        if (end < sEnd) segs.set(end, { ...s, address: end, size: sEnd - end });
        break;
      }
      case 'alloc':
        live.set(e.addr, { size: e.size, block: blockSizes?.get(e), frames: e.frames });
        break;
      case 'free_completed':
        live.delete(e.addr);
        break;
      default:
        break;
    }
  }
  const allocs = [...live.entries()].sort((a, b) => a[0] - b[0]);
  const out: SnapshotSegment[] = [];
  let k = 0;
  for (const s of [...segs.values()].sort((a, b) => a.address - b.address)) {
    const end = s.address + s.size;
    const blocks: SnapshotBlock[] = [];
    let at = s.address;
    while (k < allocs.length && allocs[k][0] < s.address) k++;
    for (; k < allocs.length && allocs[k][0] < end; k++) {
      const [addr, a] = allocs[k];
      if (addr < at) continue; // overlaps the previous block: a damaged trace
      if (addr > at) blocks.push({ address: at, size: addr - at, requestedSize: 0, state: 'inactive', frames: NO_FRAMES });
      const nextStart = k + 1 < allocs.length ? Math.min(allocs[k + 1][0], end) : end;
      const size = Math.min(a.block ?? Math.max(MIN_BLOCK, Math.ceil(a.size / MIN_BLOCK) * MIN_BLOCK), nextStart - addr);
      blocks.push({ address: addr, size, requestedSize: a.size, state: 'active_allocated', frames: a.frames });
      at = addr + size;
    }
    if (at < end) blocks.push({ address: at, size: end - at, requestedSize: 0, state: 'inactive', frames: NO_FRAMES });
    out.push(segmentFrom(device, s.address, s.size, s.stream, s.size !== SMALL_SEGMENT || s.expandable, s.expandable, s.frames, blocks));
  }
  return out;
}

/** allocator_settings as PyTorch writes it, from a PYTORCH_CUDA_ALLOC_CONF string. */
export function settingsFromAllocConf(conf: string): SnapshotAllocatorSettings {
  const a = parseAllocConf(conf);
  return {
    conf,
    maxSplitSize: a.maxSplitSize,
    garbageCollectionThreshold: a.garbageCollectionThreshold,
    expandableSegments: a.expandableSegments,
    roundupPower2Divisions: a.roundupPower2Divisions,
    other: new Map<string, PickleValue>([
      ['pinned_num_register_threads', 1],
      ['release_lock_on_cudamalloc', false],
      ['pinned_use_cuda_host_register', false],
    ]),
  };
}

// ---- the run store's seam ----------------------------------------------------------------

const frameCache = new Map<string, Frames>();

/** One synthetic frame naming what vramlab knew about the caller: module path and category. */
function runFrames(module: string, category: string): Frames {
  const key = `${module}\u0000${category}`;
  let f = frameCache.get(key);
  if (!f) {
    const frame: Frame = { name: module || category || 'vramlab', filename: category ? `vramlab:${category}` : 'vramlab', line: 0 };
    f = Object.freeze([frame]);
    if (frameCache.size < 10_000) frameCache.set(key, f);
  }
  return f;
}

/**
 * A stored run as a snapshot. Needs the run's allocator history (spec history on); runs
 * without it export their final state only, which is empty. Phase markers become
 * external_annotations, as PyTorch records profiler ranges.
 */
export function exportRunRecord(record: RunRecord, allocConf = record.meta.spec.alloc_conf ?? ''): Snapshot {
  const events: ExportEvent[] = [];
  const annotations: ExportAnnotation[] = [];
  for (const e of record.events) {
    if (e.type === 'phase') {
      annotations.push({
        stage: e.edge === 'begin' ? 'START' : 'END',
        name: e.name + (e.module ? `:${e.module}` : ''),
        timeUs: e.t * 1000,
      });
      continue;
    }
    const action = normaliseAction(e.action);
    if (!action) continue;
    events.push({
      action,
      addr: e.addr,
      size: e.size,
      blockSize: e.blockSize,
      timeUs: e.t * 1000,
      frames: runFrames(e.module, e.category),
      deviceFree: action === 'oom' ? e.addr : undefined,
    });
  }
  // The run's modelled clock starts when the run was created.
  const created = Date.parse(record.meta.created);
  return buildSnapshot({
    events,
    allocConf,
    annotations,
    timeBaseUs: Number.isFinite(created) ? created * 1000 : Date.now() * 1000,
    history: runHistory(record),
  });
}

/** What the record holds of the run's history: the stored mark, or the counts of a run read decimated. */
export function runHistory(record: RunRecord): HistoryKept | undefined {
  const stored = record.meta.summary?.history;
  if (!record.decimated) return stored;
  const kept = record.events.reduce((n, e) => n + (e.type === 'alloc' ? 1 : 0), 0);
  const recorded = Math.max(stored?.recorded ?? 0, record.decimated.events);
  return { recorded, kept, truncated: kept < recorded };
}

/** vramlab's native history names ('free', 'empty_cache') mapped onto PyTorch's. */
export function normaliseAction(a: string): TraceAction | null {
  switch (a) {
    case 'free':
      return 'free_completed';
    case 'alloc':
    case 'free_requested':
    case 'free_completed':
    case 'segment_alloc':
    case 'segment_free':
    case 'segment_map':
    case 'segment_unmap':
    case 'oom':
    case 'snapshot':
      return a;
    default:
      return null; // empty_cache: its segment frees are in the trace already
  }
}

// ---- a replay's seam -----------------------------------------------------------------------

/**
 * A replay as a snapshot: the replayed allocator's own history (new addresses, PyTorch's
 * action names) with each allocation's stack carried over from the original trace, and the
 * final segments derived from that complete history.
 */
export function replayHistoryToSnapshot(
  history: readonly NativeHistoryEvent[],
  trace: ReplayTrace,
  original: Snapshot,
  allocConf: string,
  /** The replayed allocator's final segments: needed when the replay began from a seeded state, whose segments the history never shows being made. */
  segments?: ExportSegment[],
): Snapshot {
  const frames = original.deviceTraces[trace.device] ?? [];
  const allocOps: number[] = [];
  for (let i = 0; i < trace.count; i++) if (trace.ops[i] === REPLAY_ALLOC || trace.ops[i] === REPLAY_OOM_ATTEMPT) allocOps.push(i);
  let next = 0; // alloc ops and recorded-OOM attempts are answered in order: by an alloc, or by an oom
  const events: ExportEvent[] = [];
  for (const h of history) {
    const action = normaliseAction(h.action);
    if (!action) continue;
    let f: Frames = NO_FRAMES;
    if (action === 'alloc' || action === 'oom') {
      const op = allocOps[next++];
      const ev = op === undefined ? -1 : trace.eventIndex[op];
      if (ev >= 0) f = frames[ev].frames;
    }
    events.push({
      action,
      addr: h.address,
      size: h.size,
      stream: trace.streamValues[h.stream ?? 0] ?? 0,
      timeUs: Math.round((h.timeNs ?? 0) / 1000),
      frames: f,
      deviceFree: action === 'oom' ? h.address : undefined,
    });
  }
  // Frees carry the stack of the allocation they release, as PyTorch's do.
  const byAddr = new Map<number, Frames>();
  for (const e of events) {
    if (e.action === 'alloc') byAddr.set(e.addr, e.frames ?? NO_FRAMES);
    else if (e.action === 'free_completed') e.frames = byAddr.get(e.addr) ?? NO_FRAMES;
  }
  // The replay's modelled clock starts where the recording's did (or now, if it had no times).
  const first = frames.find((e) => e.timeUs > 0)?.timeUs;
  return buildSnapshot({
    device: trace.device,
    events,
    allocConf,
    ...(segments ? { segments } : {}),
    timeBaseUs: first ?? Date.now() * 1000,
  });
}
