// The host's snapshot methods: chunked upload of a torch.cuda.memory snapshot
// pickle, views of its trace, and what-if replays through the native caching allocator.
// Parsing and replay are main/snapshot's; this file keeps snapshots in memory and shapes
// the replies. Every failure is an Error with a message meant for the person.
import type { NativeAddon } from '../addon/types';
import type {
  SnapAllocatorSettings,
  SnapGrid,
  SnapLargest,
  SnapMinCapacity,
  SnapOutcome,
  SnapSummary,
  SnapTimeline,
  SnapUploadResult,
  SnapWhatIf,
  SnapWhere,
} from '../contract/snapshot';
import { minCapacity, type MinCapacity } from '../snapshot/min_capacity';
import { diagnoseOom, type OomDiagnosis } from '../snapshot/oom_diagnosis';
import type { WhereMemoryWas } from '../snapshot/where';
import { allocConfFromSettings } from '../snapshot/alloc_conf';
import { busiestDevice, loadSnapshotBufferSliced, PickleError, snapshotDevices, SnapshotFormatError } from '../snapshot/import';
import { windowStart, windowStartSliced, type WindowStart } from '../snapshot/window_start';
import type { Snapshot } from '../snapshot/model';
import { hasNativeReplay, nativeReplay, replayer, type Replayer, type ReplayOutcome } from '../snapshot/replay';
import { parseSize } from '../snapshot/sizes';
import { traceStats, type TraceStats } from '../snapshot/stats';
import type { Host } from './host';
import { buildTimeline } from './snapshot_timeline';
import { stateAt } from './snapshot_state';
import { cutFrame as cut } from './snapshot_stacks';
import { SnapshotStore, type StoreLimits } from './snapshot_store';

interface DeviceCache {
  stats: TraceStats;
  /** The first recorded OOM's diagnosis (a dozen replays: computed once). */
  diagnosis?: OomDiagnosis | null;
  /** The allocator state before the first event: the start of every stateAt walk. */
  start: WindowStart;
  /** The last timeline sent, by its limits (the screen asks again on every visit). */
  timeline?: { key: string; value: Omit<SnapTimeline, 'id'> };
  replayer?: Replayer;
  /** Replays already run, by settings and capacity (bounded). */
  outcomes: Map<string, SnapOutcome>;
  /** Smallest fitting capacities already searched, by settings (bounded like outcomes). */
  minCaps?: Map<string, MinCapacity>;
}

interface Extra {
  devices: Map<number, DeviceCache>;
}

const MAX_CACHED_OUTCOMES = 64;

export interface SnapshotMethodOptions {
  limits?: Partial<StoreLimits>;
}

export function registerSnapshotMethods(host: Host, native: NativeAddon, options: SnapshotMethodOptions = {}): SnapshotStore<Extra> {
  const store = new SnapshotStore<Extra>(options.limits);
  host.onDispose(() => store.clear());

  const cacheFor = (id: string, device: number | undefined) => {
    const entry = store.get(id);
    const s = entry.snapshot;
    const devices = snapshotDevices(s);
    const dev = device ?? defaultDevice(s);
    if (device !== undefined && !devices.includes(device))
      throw new Error(
        `snapshot "${entry.name}" has no device ${device}; it has ${devices.length ? `device${devices.length > 1 ? 's' : ''} ${devices.join(', ')}` : 'no trace or segments'}`,
      );
    let c = entry.extra.devices.get(dev);
    if (!c) {
      c = { stats: traceStats(s, dev, { top: 200, maxPoints: 1 }), start: windowStart(s, dev), outcomes: new Map() };
      entry.extra.devices.set(dev, c);
    }
    return { entry, s, device: dev, cache: c };
  };

  const summarize = (id: string): SnapSummary => {
    const { entry, s, device, cache } = cacheFor(id, undefined);
    const st = cache.stats;
    const trace = s.deviceTraces[device] ?? [];
    return {
      id: entry.id,
      name: entry.name,
      bytes: entry.bytes,
      devices: snapshotDevices(s),
      device,
      segments: s.segments.filter((g) => g.device === device).length,
      traceLength: trace.length,
      startUs: trace.length ? trace[0].timeUs : null,
      durationUs: trace.length ? trace[trace.length - 1].timeUs - trace[0].timeUs : null,
      lateStart: st.lateStart,
      start: st.start,
      ringBufferLikely: st.lateStart && trace.length >= 1000 && trace.length % 1000 === 0,
      counts: { ...st.counts },
      initial: st.initial,
      final: st.final,
      peakAllocated: st.peakAllocated,
      peakReserved: st.peakReserved,
      unallocatedAtPeakReserved: st.unallocatedAtPeakReserved,
      allocatorSettings: settingsOf(s),
      ooms: st.ooms.map((o, k) => {
        const d = k === 0 ? diagnosis(cache, s, device) : null;
        return {
          ...o,
          frames: o.frames.map(cut),
          capped: o.deviceFree > o.size,
          reproducingCaps: d?.reproducingCaps ?? null,
          where: o.where && cutWhere(o.where),
        };
      }),
      whereAtPeak: cutWhere(st.whereAtPeak),
      replay: hasNativeReplay(native),
    };
  };

  const diagnosis = (c: DeviceCache, s: Snapshot, device: number): OomDiagnosis | null => {
    if (c.diagnosis !== undefined) return c.diagnosis;
    c.diagnosis = null;
    if (c.stats.ooms.length && hasNativeReplay(native)) {
      c.replayer ??= replayer(s, device, nativeReplay(native));
      c.diagnosis = diagnoseOom(c.replayer, c.stats.ooms[0], c.stats.events);
    }
    return c.diagnosis;
  };

  const outcome = (c: DeviceCache, s: Snapshot, device: number, allocConf: string, capacity: number | null): SnapOutcome => {
    const key = `${allocConf}\u0000${capacity ?? ''}`;
    const known = c.outcomes.get(key);
    if (known) return known;
    c.replayer ??= replayer(s, device, nativeReplay(native));
    const r = toOutcome(c.replayer.run({ allocConf, capacity }));
    if (c.outcomes.size >= MAX_CACHED_OUTCOMES) c.outcomes.delete(c.outcomes.keys().next().value!);
    c.outcomes.set(key, r);
    return r;
  };

  host.register('snapshot.upload', async (params): Promise<SnapUploadResult> => {
    const p = params as { uploadId: string; index: number; total: number; chunk: string; name?: string };
    const data = Buffer.from(p.chunk, 'base64');
    const name = store.uploadName(p.uploadId) ?? p.name ?? 'snapshot.pickle';
    const whole = store.addChunk(p.uploadId, p.index, p.total, data, name);
    if (!whole) {
      const pr = store.progress(p.uploadId)!;
      return { done: false, uploadId: p.uploadId, received: pr.received, total: pr.total };
    }
    let snapshot: Snapshot;
    try {
      // Read in slices with the event loop turning between them: other clients (and this
      // one's other requests) are answered while a large snapshot opens.
      snapshot = await loadSnapshotBufferSliced(whole);
    } catch (err) {
      if (err instanceof PickleError || err instanceof SnapshotFormatError)
        throw new Error(`${name} is not a PyTorch memory snapshot vramlab can read: ${err.message}`, { cause: err });
      throw err;
    }
    // The state at the trace's start is the costly part after the read (a walk back over every
    // event): done here in slices too, so summarize() finds it ready.
    const dev = defaultDevice(snapshot);
    const start = await windowStartSliced(snapshot, dev);
    const devices = new Map([[dev, { stats: traceStats(snapshot, dev, { top: 200, maxPoints: 1 }), start, outcomes: new Map() }]]);
    const entry = store.add(name, whole.length, snapshot, { devices });
    return { done: true, uploadId: p.uploadId, snapshot: summarize(entry.id) };
  });

  host.register('snapshot.list', () => store.list().map((e) => summarize(e.id)));

  host.register('snapshot.close', (params) => ({ closed: store.delete((params as { id: string }).id) }));

  host.register('snapshot.timeline', (params) => {
    const p = params as { id: string; device?: number; maxPoints?: number; maxAllocations?: number };
    const { entry, s, device, cache } = cacheFor(p.id, p.device);
    const key = `${p.maxPoints ?? 800}/${p.maxAllocations ?? 80}`;
    if (cache.timeline?.key !== key) cache.timeline = { key, value: buildTimeline(s, device, p.maxPoints ?? 800, p.maxAllocations ?? 80) };
    return { id: entry.id, ...cache.timeline.value };
  });

  host.register('snapshot.stateAt', (params) => {
    const p = params as { id: string; device?: number; eventIndex: number };
    const { entry, s, device, cache } = cacheFor(p.id, p.device);
    return { id: entry.id, ...stateAt(s, device, p.eventIndex, cache.start) };
  });

  host.register('snapshot.largest', (params): SnapLargest => {
    const p = params as { id: string; device?: number; top?: number };
    const { entry, device, cache } = cacheFor(p.id, p.device);
    const allocations = cache.stats.largest.slice(0, p.top ?? 20).map((a) => ({ ...a, frames: a.frames.map(cut) }));
    return { id: entry.id, device, allocations };
  });

  host.register('snapshot.whatIf', (params): SnapWhatIf => {
    const p = params as { id: string; device?: number; allocConf: string; capacity?: number | string | null };
    const { entry, s, device, cache } = cacheFor(p.id, p.device);
    const capacity = capacityOf(p.capacity);
    const st = cache.stats;
    const c = st.counts;
    return {
      id: entry.id,
      device,
      capacity,
      recorded: {
        peakAllocated: st.peakAllocated.bytes,
        peakReserved: st.peakReserved.bytes,
        numDeviceAlloc: c.segment_alloc + c.segment_map,
        numDeviceFree: c.segment_free + c.segment_unmap,
        fragmentation: st.unallocatedAtPeakReserved,
        ooms: c.oom,
      },
      original: outcome(cache, s, device, allocConfFromSettings(s.allocatorSettings), capacity),
      whatIf: outcome(cache, s, device, p.allocConf.trim(), capacity),
    };
  });

  // One setting per request: the screen asks for each in turn, so it shows progress and
  // partial results and can stop between them.
  host.register('snapshot.minCapacity', (params): SnapMinCapacity => {
    const p = params as { id: string; device?: number; allocConf: string };
    const { entry, s, device, cache } = cacheFor(p.id, p.device);
    const conf = p.allocConf.trim();
    cache.minCaps ??= new Map();
    let m = cache.minCaps.get(conf);
    if (!m) {
      cache.replayer ??= replayer(s, device, nativeReplay(native));
      m = minCapacity(cache.replayer, conf, cache.stats.events);
      if (cache.minCaps.size >= MAX_CACHED_OUTCOMES) cache.minCaps.delete(cache.minCaps.keys().next().value!);
      cache.minCaps.set(conf, m);
    }
    return { id: entry.id, device, ...m };
  });

  host.register('snapshot.grid', (params): SnapGrid => {
    const p = params as { id: string; device?: number; settings: string[]; capacities: (number | string | null)[] };
    const { entry, s, device, cache } = cacheFor(p.id, p.device);
    const settings = p.settings.map((x) => x.trim());
    const capacities = p.capacities.map(capacityOf);
    const cells = settings.map((conf) => capacities.map((cap) => outcome(cache, s, device, conf, cap)));
    return { id: entry.id, device, settings, capacities, cells };
  });

  return store;
}

function cutWhere(w: WhereMemoryWas): SnapWhere {
  return { ...w, sites: w.sites.slice(0, 12).map((x) => ({ ...x, site: cut(x.site), path: x.path.map(cut), op: x.op && cut(x.op) })) };
}

function defaultDevice(s: Snapshot): number {
  return snapshotDevices(s).length ? busiestDevice(s) : 0;
}

function capacityOf(c: number | string | null | undefined): number | null {
  if (c === null || c === undefined) return null;
  const bytes = typeof c === 'number' ? c : parseSize(c);
  // NaN slipped past `bytes <= 0` and reached the allocator as "unlimited".
  if (!(bytes >= 1 << 20 && bytes <= 2 ** 50)) throw new Error(`capacity must be from 1 MiB to 1 PiB (got "${c}")`);
  return Math.floor(bytes);
}

function settingsOf(s: Snapshot): SnapAllocatorSettings | null {
  const a = s.allocatorSettings;
  if (!a) return null;
  return {
    conf: a.conf,
    effectiveConf: allocConfFromSettings(a),
    maxSplitSize: a.maxSplitSize,
    garbageCollectionThreshold: a.garbageCollectionThreshold,
    expandableSegments: a.expandableSegments,
    roundupPower2Divisions: [...a.roundupPower2Divisions],
  };
}

function toOutcome(r: ReplayOutcome): SnapOutcome {
  return {
    allocConf: r.allocConf,
    capacity: r.capacity,
    peakAllocated: r.peakAllocated,
    peakReserved: r.peakReserved,
    numDeviceAlloc: r.numDeviceAlloc,
    numDeviceFree: r.numDeviceFree,
    numOoms: r.numOoms,
    numAllocRetries: r.numAllocRetries,
    fragmentation: r.unallocatedAtPeak,
    recordedOoms: r.oomAttempts.map((a) => ({ eventIndex: a.eventIndex, failed: a.failed })),
    oom: r.firstOom
      ? { eventIndex: r.firstOom.eventIndex, size: r.firstOom.size, message: r.firstOom.message, frames: r.firstOom.frames.map(cut) }
      : null,
  };
}
