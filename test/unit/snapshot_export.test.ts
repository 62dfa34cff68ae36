import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../main/contract/runs';
import { buildSnapshot, deriveSegments, exportRunRecord, snapshotToBytes } from '../../main/snapshot/export';
import { loadSnapshotBuffer, loadSnapshotFile, rebuildInitialState } from '../../main/snapshot/import';
import type { Snapshot } from '../../main/snapshot/model';
import { readPickle } from '../../main/snapshot/pickle/reader';
import type { PyDict } from '../../main/snapshot/pickle/values';
import { traceStats } from '../../main/snapshot/stats';

const FIX = path.resolve(__dirname, '../fixtures');

/** What MemoryViz.js's annotate_snapshot relies on: blocks tile each segment exactly. */
function expectTiled(s: Snapshot) {
  for (const g of s.segments) {
    let at = g.address;
    for (const b of g.blocks) {
      expect(b.address).toBe(at);
      at += b.size;
    }
    expect(at).toBe(g.address + g.totalSize);
  }
}

describe('snapshot export', () => {
  it("a trace alone rebuilds final segments consistent with PyTorch's own (mlp_adam)", () => {
    const s = loadSnapshotFile(path.join(FIX, 'torch/mlp_adam.pickle'));
    const derived = deriveSegments(s.deviceTraces[0], 0);
    expect(derived.map((g) => [g.address, g.totalSize, g.segmentType])).toEqual(
      s.segments.map((g) => [g.address, g.totalSize, g.segmentType]).sort((a, b) => (a[0] as number) - (b[0] as number)),
    );
    const liveBlocks = (x: typeof derived) =>
      x
        .flatMap((g) => g.blocks.filter((b) => b.state === 'active_allocated').map((b) => [b.address, b.requestedSize]))
        .sort((a, b) => a[0] - b[0]);
    expect(liveBlocks(derived)).toEqual(liveBlocks(s.segments));
    expectTiled({ ...s, segments: derived });
  });

  it('a built snapshot round-trips and its trace replays from an empty start', () => {
    const M = 2 ** 20;
    const snap = buildSnapshot({
      events: [
        { action: 'segment_alloc', addr: 100 * M, size: 20 * M },
        { action: 'alloc', addr: 100 * M, size: 3 * M + 7 },
        { action: 'alloc', addr: 104 * M, size: 5 * M },
        { action: 'free_completed', addr: 100 * M, size: 3 * M + 7 },
        { action: 'oom', addr: 0, size: 90 * M, deviceFree: 10 * M },
      ],
      allocConf: 'expandable_segments:True,max_split_size_mb:256',
      annotations: [{ stage: 'START', name: 'forward', timeUs: 5 }],
    });
    expectTiled(snap);
    // free_requested is added before each free_completed, as PyTorch records.
    expect(snap.deviceTraces[0].map((e) => e.action)).toEqual([
      'segment_alloc',
      'alloc',
      'alloc',
      'free_requested',
      'free_completed',
      'oom',
    ]);
    const back = loadSnapshotBuffer(snapshotToBytes(snap));
    expect(back.segments).toEqual(snap.segments);
    expect(back.deviceTraces).toEqual(snap.deviceTraces);
    expect(back.allocatorSettings?.expandableSegments).toBe(true);
    expect(back.allocatorSettings?.maxSplitSize).toBe(256 * M);
    expect(rebuildInitialState(back, 0).lateStart).toBe(false);
    const st = traceStats(back, 0);
    expect(st.peakReserved.bytes).toBe(20 * M);
    expect(st.ooms).toEqual([expect.objectContaining({ eventIndex: 5, size: 90 * M, deviceFree: 10 * M, frames: [] })]);
    // The dict has the keys _memory_viz.py and MemoryViz.js read.
    const raw = readPickle(snapshotToBytes(snap)) as PyDict;
    expect([...raw.keys()]).toEqual(['segments', 'device_traces', 'allocator_settings', 'external_annotations']);
    const seg = (raw.get('segments') as PyDict[])[0];
    for (const k of ['device', 'address', 'total_size', 'stream', 'segment_type', 'blocks', 'allocated_size'])
      expect(seg.has(k)).toBe(true);
    const oom = (raw.get('device_traces') as PyDict[][])[0].at(-1)!;
    expect(oom.get('device_free')).toBe(10 * M);
    expect(oom.has('addr')).toBe(false);
  });

  it('a stored run (the run store seam) exports its allocator history and phases', () => {
    const M = 2 ** 20;
    const record = {
      meta: { id: 'r', created: '2026-03-01T12:00:00.000Z', spec: { alloc_conf: 'max_split_size_mb:128' } },
      timeline: [],
      events: [
        { type: 'phase', t: 0, edge: 'begin', name: 'forward', iteration: 0, micro_batch: 0, module: '' },
        { type: 'alloc', t: 0.1, action: 'segment_alloc', addr: 10 * M, size: 2 * M, category: 'activations', module: 'fc1' },
        { type: 'alloc', t: 0.1, action: 'alloc', addr: 10 * M, size: 4096, category: 'activations', module: 'fc1' },
        { type: 'alloc', t: 0.2, action: 'free', addr: 10 * M, size: 4096, category: 'activations', module: 'fc1' },
        { type: 'alloc', t: 0.3, action: 'empty_cache', addr: 0, size: 0, category: '', module: '' },
        { type: 'phase', t: 1, edge: 'end', name: 'forward', iteration: 0, micro_batch: 0, module: '' },
      ],
    } as unknown as RunRecord;
    const snap = exportRunRecord(record);
    expect(snap.deviceTraces[0].map((e) => e.action)).toEqual(['segment_alloc', 'alloc', 'free_requested', 'free_completed']);
    expect(snap.deviceTraces[0][1].frames[0]).toEqual({ name: 'fc1', filename: 'vramlab:activations', line: 0 });
    expect(snap.allocatorSettings?.maxSplitSize).toBe(128 * M);
    expect(snap.segments).toHaveLength(1);
    expect(snap.segments[0].blocks).toEqual([{ address: 10 * M, size: 2 * M, requestedSize: 0, state: 'inactive', frames: [] }]);
    const back = loadSnapshotBuffer(snapshotToBytes(snap));
    expect((back.other.get('external_annotations') as PyDict[]).map((a) => a.get('stage'))).toEqual(['START', 'END']);
    // Times are epoch µs from the run's creation (PyTorch's viewer would otherwise show 1970).
    const base = Date.parse('2026-03-01T12:00:00.000Z') * 1000;
    expect(back.deviceTraces[0].map((e) => e.timeUs)).toEqual([base + 100, base + 100, base + 200, base + 200]);
    expect((back.other.get('external_annotations') as PyDict[]).map((a) => a.get('time_us'))).toEqual([base, base + 1000]);
  });

  it("a run's recorded block sizes tile the exported segments (an unsplit remainder stays in its block)", () => {
    const M = 2 ** 20;
    // A 19.5 MiB request in a 20 MiB segment leaves 512 KiB, too small to split off a large
    // block (remainder must exceed 1 MiB), so the allocator hands out the whole 20 MiB.
    const record = {
      meta: { id: 'r', spec: {} },
      timeline: [],
      events: [
        { type: 'alloc', t: 0.1, action: 'segment_alloc', addr: 100 * M, size: 20 * M, category: 'activations', module: 'fc1' },
        {
          type: 'alloc',
          t: 0.1,
          action: 'alloc',
          addr: 100 * M,
          size: 19.5 * M,
          blockSize: 20 * M,
          category: 'activations',
          module: 'fc1',
        },
      ],
    } as unknown as RunRecord;
    const blocks = exportRunRecord(record).segments[0].blocks;
    expect(blocks).toEqual([
      { address: 100 * M, size: 20 * M, requestedSize: 19.5 * M, state: 'active_allocated', frames: expect.any(Array) },
    ]);
  });
});
