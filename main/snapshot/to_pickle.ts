// The typed snapshot back to the dict PyTorch writes (same keys, same key order as
// torch/csrc/cuda/memory_snapshot.cpp), ready for the pickle writer. Shared stack traces
// stay shared objects, so the writer stores each one once.
import type { Frame, Frames, Snapshot, SnapshotAllocatorSettings, SnapshotSegment, TraceEvent } from './model';
import { normaliseInt, PyFloat, PyTuple, type PickleValue, type PyDict } from './pickle/values';

function dict(entries: [string, PickleValue][]): PyDict {
  return new Map(entries);
}

export function snapshotToPickle(s: Snapshot): PyDict {
  const frameCache = new Map<Frame, PyDict>();
  const framesCache = new Map<Frames, PickleValue[]>();
  const addr = (a: number): number | bigint => (s.addressBase === 0n ? a : normaliseInt(BigInt(a) + s.addressBase));

  const frame = (f: Frame): PyDict => {
    let d = frameCache.get(f);
    if (!d) {
      d = dict([
        ['name', f.name],
        ['filename', f.filename],
        ['line', f.line],
      ]);
      frameCache.set(f, d);
    }
    return d;
  };
  const frames = (fs: Frames): PickleValue[] => {
    let l = framesCache.get(fs);
    if (!l) {
      l = fs.map(frame);
      framesCache.set(fs, l);
    }
    return l;
  };

  // PyTorch inserts an empty frame list where the dict is built, and a symbolized one at
  // the very end: so a segment's 'frames' comes before 'blocks' only when it is empty.
  const segment = (g: SnapshotSegment): PyDict => {
    const d = dict([
      ['device', g.device],
      ['address', addr(g.address)],
      ['total_size', g.totalSize],
      ['allocated_size', g.allocatedSize],
      ['active_size', g.activeSize],
      ['requested_size', g.requestedSize],
      ['stream', g.stream],
      ['segment_type', g.segmentType],
      ['segment_pool_id', new PyTuple([g.segmentPoolId[0], g.segmentPoolId[1]])],
      ['is_expandable', g.isExpandable],
    ]);
    if (!g.frames.length) d.set('frames', frames(g.frames));
    d.set(
      'blocks',
      g.blocks.map((b) =>
        dict([
          ['address', addr(b.address)],
          ['size', b.size],
          ['requested_size', b.requestedSize],
          ['state', b.state],
          ['frames', frames(b.frames)],
        ]),
      ),
    );
    if (g.frames.length) d.set('frames', frames(g.frames));
    return d;
  };

  const event = (e: TraceEvent): PyDict => {
    const entries: [string, PickleValue][] = [['action', e.action]];
    if (e.action === 'oom') entries.push(['device_free', e.deviceFree ?? 0]);
    else entries.push(['addr', addr(e.addr)]);
    entries.push(['size', e.size], ['stream', e.stream], ['time_us', e.timeUs]);
    if (e.compileContext !== undefined) entries.push(['compile_context', e.compileContext]);
    if (e.userMetadata !== undefined) entries.push(['user_metadata', e.userMetadata]);
    // Events recorded without a stack have no 'frames' key at all.
    if (e.frames.length) entries.push(['frames', frames(e.frames)]);
    return dict(entries);
  };

  const root = dict([
    ['segments', s.segments.map(segment)],
    ['device_traces', s.deviceTraces.map((t) => t.map(event))],
  ]);
  if (s.allocatorSettings) root.set('allocator_settings', settings(s.allocatorSettings));
  for (const [k, v] of s.other) root.set(k, v);
  return root;
}

function settings(a: SnapshotAllocatorSettings): PyDict {
  const d = dict([
    ['PYTORCH_CUDA_ALLOC_CONF', a.conf],
    ['max_split_size', a.maxSplitSize ?? -1],
    ['garbage_collection_threshold', new PyFloat(a.garbageCollectionThreshold)],
    ['expandable_segments', a.expandableSegments],
  ]);
  for (const [k, v] of a.other) d.set(k, v);
  const roundup: PyDict = new Map();
  a.roundupPower2Divisions.forEach((v, i) => roundup.set(String(2 ** i), v));
  d.set('roundup_power2_divisions', roundup);
  return d;
}
