import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allocConfFromSettings } from '../../main/snapshot/alloc_conf';
import { snapshotToBytes, settingsFromAllocConf } from '../../main/snapshot/export';
import { SnapshotFormatError, snapshotFromPickle } from '../../main/snapshot/from_pickle';
import { loadSnapshotBuffer, loadSnapshotFile, rebuildInitialState } from '../../main/snapshot/import';
import type { Snapshot, TraceEvent } from '../../main/snapshot/model';
import { readPickle } from '../../main/snapshot/pickle/reader';
import { writePickle } from '../../main/snapshot/pickle/writer';
import { type PickleValue, type PyDict } from '../../main/snapshot/pickle/values';
import { traceStats } from '../../main/snapshot/stats';
import { snapshotToPickle } from '../../main/snapshot/to_pickle';
import { digest } from './pickle_canon';

const FIX = path.resolve(__dirname, '../fixtures');
const digests: Record<string, string> = JSON.parse(readFileSync(path.join(FIX, 'snapshot/digests.json'), 'utf8'));
const NAMES = ['mlp_adam', 'resnet18_sgd'];
const load = (name: string) => loadSnapshotFile(path.join(FIX, 'torch', `${name}.pickle`));
const stats = (name: string) => JSON.parse(readFileSync(path.join(FIX, 'torch', `${name}.stats.json`), 'utf8'));

/** Live segments and allocations after the first k events of a complete trace. */
function forward(events: readonly TraceEvent[], k: number) {
  const segs = new Map<number, number>();
  const live = new Map<number, number>();
  for (const e of events.slice(0, k)) {
    if (e.action === 'segment_alloc') segs.set(e.addr, e.size);
    if (e.action === 'segment_free') segs.delete(e.addr);
    if (e.action === 'alloc') live.set(e.addr, e.size);
    if (e.action === 'free_completed') live.delete(e.addr);
  }
  return { segs, live };
}

describe('snapshot import', () => {
  for (const name of NAMES) {
    it(`${name}: the trace alone gives PyTorch's peak_reserved, num_device_alloc and num_device_free`, () => {
      const s = load(name);
      const st = traceStats(s, 0);
      const want = stats(name);
      expect(st.lateStart).toBe(false);
      expect(st.peakReserved.bytes).toBe(want.peak_reserved);
      expect(st.counts.segment_alloc).toBe(want.num_device_alloc);
      expect(st.counts.segment_free).toBe(want.num_device_free);
      // Requested bytes never exceed PyTorch's rounded allocated bytes, and come within 1%.
      expect(st.peakAllocated.bytes).toBeLessThanOrEqual(want.peak_allocated);
      expect(st.peakAllocated.bytes).toBeGreaterThan(want.peak_allocated * 0.99);
      expect(st.final.reserved).toBe(s.segments.reduce((n, g) => n + g.totalSize, 0));
      expect(st.largest.length).toBe(10);
      expect(st.largest[0].size).toBeGreaterThanOrEqual(st.largest[9].size);
      expect(st.timeline.reserved.length).toBeLessThanOrEqual(2000);
      expect(Math.max(...st.timeline.reserved)).toBe(want.peak_reserved);
    });

    it(`${name}: a trace cut at any point rebuilds the state before its first event`, () => {
      const s = load(name);
      const events = s.deviceTraces[0];
      for (const k of [1, 17, Math.floor(events.length / 3), Math.floor(events.length / 2), events.length - 5]) {
        const late: Snapshot = { ...s, deviceTraces: [events.slice(k)] };
        const init = rebuildInitialState(late, 0);
        const want = forward(events, k);
        expect(init.lateStart).toBe(want.segs.size + want.live.size > 0);
        expect(new Map(init.segments.map((g) => [g.address, g.size]))).toEqual(want.segs);
        expect(new Map(init.blocks.map((b) => [b.address, b.requestedSize]))).toEqual(want.live);
        // The stats of the late trace continue from that state: same peak reserved from k on.
        const st = traceStats(late, 0);
        expect(st.initial.reserved).toBe([...want.segs.values()].reduce((a, b) => a + b, 0));
      }
    });

    it(`${name}: import -> export -> import keeps segments, trace and settings; bytes equal Python's view`, () => {
      const s = load(name);
      const bytes = snapshotToBytes(s);
      const again = loadSnapshotBuffer(bytes);
      expect(again.segments).toEqual(s.segments);
      expect(again.deviceTraces).toEqual(s.deviceTraces);
      expect(again.allocatorSettings).toEqual(s.allocatorSettings);
      expect([...again.other.keys()]).toEqual([...s.other.keys()]);
      expect(digest(readPickle(bytes))).toBe(digests[`torch/${name}.pickle`]);
    });
  }

  it("converts allocator_settings to PYTORCH_CUDA_ALLOC_CONF (and back, as PyTorch's dict)", () => {
    expect(allocConfFromSettings(load('mlp_adam').allocatorSettings)).toBe('');
    for (const conf of [
      'max_split_size_mb:256',
      'expandable_segments:True',
      'garbage_collection_threshold:0.6,roundup_power2_divisions:4',
      'roundup_power2_divisions:[1:1,2:2,4:4,8:8,16:16,32:32,64:64,128:1,256:2,512:4,1024:8,2048:1,4096:1,8192:1,16384:1,32768:1]',
    ]) {
      const settings = settingsFromAllocConf(conf);
      expect(allocConfFromSettings(settings)).toBe(conf);
      // Through the pickle form too.
      const s: Snapshot = { segments: [], deviceTraces: [], allocatorSettings: settings, addressBase: 0n, other: new Map() };
      expect(loadSnapshotBuffer(snapshotToBytes(s)).allocatorSettings).toEqual(settings);
    }
    expect(settingsFromAllocConf('roundup_power2_divisions:[256:4,>:8]').roundupPower2Divisions).toEqual([
      4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8,
    ]);
  });

  it('addresses above 2^53 stay exact: stored relative to a base, restored on export', () => {
    const base = 2n ** 60n;
    const raw = snapshotToPickle({
      segments: [],
      deviceTraces: [[]],
      allocatorSettings: null,
      addressBase: 0n,
      other: new Map(),
    });
    const seg = new Map<string, PickleValue>([
      ['device', 0],
      ['address', base + 4096n],
      ['total_size', 2097152],
      ['stream', 0],
      ['segment_type', 'small'],
      [
        'blocks',
        [
          new Map<string, PickleValue>([
            ['address', base + 4096n],
            ['size', 2097152],
            ['requested_size', 0],
            ['state', 'inactive'],
          ]),
        ],
      ],
    ]);
    raw.set('segments', [seg]);
    raw.set('device_traces', [
      [
        new Map<string, PickleValue>([
          ['action', 'segment_alloc'],
          ['addr', base + 4096n],
          ['size', 2097152],
          ['stream', 0],
        ]),
      ],
    ]);
    const s = snapshotFromPickle(readPickle(writePickle(raw)));
    expect(s.addressBase).toBe(base);
    expect(s.segments[0].address).toBe(4096);
    expect(s.deviceTraces[0][0].addr).toBe(4096);
    const out = readPickle(snapshotToBytes(s)) as PyDict;
    expect((out.get('segments') as PyDict[])[0].get('address')).toBe(base + 4096n);
  });

  it('reads the older layout (block history instead of frames, no requested_size)', () => {
    const frame = new Map<string, PickleValue>([
      ['name', 'forward'],
      ['filename', 'model.py'],
      ['line', 12],
    ]);
    const raw = new Map<string, PickleValue>([
      [
        'segments',
        [
          new Map<string, PickleValue>([
            ['device', 0],
            ['address', 1 << 30],
            ['total_size', 2097152],
            ['stream', 0],
            [
              'blocks',
              [
                new Map<string, PickleValue>([
                  ['size', 1024],
                  ['state', 'active_allocated'],
                  [
                    'history',
                    [
                      new Map<string, PickleValue>([
                        ['addr', 1 << 30],
                        ['real_size', 1000],
                        ['frames', [frame]],
                      ]),
                    ],
                  ],
                ]),
                new Map<string, PickleValue>([
                  ['size', 2097152 - 1024],
                  ['state', 'inactive'],
                ]),
              ],
            ],
          ]),
        ],
      ],
    ]);
    const s = snapshotFromPickle(raw);
    const b = s.segments[0].blocks[0];
    expect(b).toMatchObject({ address: 1 << 30, size: 1024, requestedSize: 1000, state: 'active_allocated' });
    expect(b.frames[0]).toEqual({ name: 'forward', filename: 'model.py', line: 12 });
    expect(s.segments[0].blocks[1].address).toBe((1 << 30) + 1024);
    expect(s.segments[0].allocatedSize).toBe(1024);
  });

  it('expandable segments: undoing map/unmap cuts and merges the mapped ranges', () => {
    const ev = (action: TraceEvent['action'], addr: number, size: number): TraceEvent => ({
      action,
      addr,
      size,
      stream: 0,
      timeUs: 0,
      frames: [],
    });
    const M = 2 ** 21;
    const base = 2 ** 40;
    const snap = (finalSize: number, events: TraceEvent[]): Snapshot => ({
      segments: [
        {
          device: 0,
          address: base,
          totalSize: finalSize,
          allocatedSize: 0,
          activeSize: 0,
          requestedSize: 0,
          stream: 0,
          segmentType: 'large',
          segmentPoolId: [0, 0],
          isExpandable: true,
          frames: [],
          blocks: [{ address: base, size: finalSize, requestedSize: 0, state: 'inactive', frames: [] }],
        },
      ],
      deviceTraces: [events],
      allocatorSettings: null,
      addressBase: 0n,
      other: new Map(),
    });
    const ranges = (s: Snapshot) => rebuildInitialState(s, 0).segments.map((g) => [g.address - base, g.size / M]);
    // Grew by 2 MiB during the trace: before it, only the first 2 MiB were mapped.
    expect(ranges(snap(4 * M, [ev('segment_map', base + 2 * M, 2 * M)]))).toEqual([[0, 2]]);
    // Shrank by 4 MiB: before it, one 6 MiB range (merged back together).
    expect(ranges(snap(2 * M, [ev('segment_unmap', base + 2 * M, 4 * M)]))).toEqual([[0, 6]]);
    // A hole unmapped in the middle of a range, then its tail mapped again.
    expect(
      ranges(
        snap(2 * M, [
          ev('segment_map', base + 6 * M, 2 * M),
          ev('segment_unmap', base + 2 * M, 2 * M),
          ev('segment_unmap', base + 6 * M, 2 * M),
        ]),
      ),
    ).toEqual([[0, 4]]);
  });

  it('rejects what is not a snapshot, naming the field', () => {
    expect(() => snapshotFromPickle([1, 2])).toThrow(SnapshotFormatError);
    expect(() => snapshotFromPickle(new Map([['x', 1]]))).toThrow(/without 'segments'/);
    const bad = new Map<string, PickleValue>([
      ['segments', []],
      ['device_traces', [[new Map<string, PickleValue>([['action', 'teleport']])]]],
    ]);
    expect(() => snapshotFromPickle(bad)).toThrow(/device_traces\[0\]\[0\]\.action/);
    const bad2 = new Map<string, PickleValue>([['segments', [new Map<string, PickleValue>([['address', 'x']])]]]);
    expect(() => snapshotFromPickle(bad2)).toThrow(/segments\[0\]\.address: expected an int/);
  });
});
