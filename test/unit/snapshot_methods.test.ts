// The host's snapshot methods through Host.handle, as both transports call them, with the
// real PyTorch snapshots in test/fixtures/torch.
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Host } from '../../main/host/host';
import { registerSnapshotMethods } from '../../main/host/snapshot_methods';
import { SnapshotStore } from '../../main/host/snapshot_store';
import { SNAPSHOT_CHUNK_BYTES, SNAPSHOT_CHUNK_CHARS, type SnapSummary } from '../../main/contract/snapshot';
import { MAX_MESSAGE_BYTES } from '../../main/contract/messages';
import { loadSnapshotFile } from '../../main/snapshot/import';
import { snapshotToBytes } from '../../main/snapshot/export';
import { traceStats } from '../../main/snapshot/stats';
import { native } from '../helpers/addon';
import { addonCandidates } from '../../main/addon/load';

const FIX = path.resolve(import.meta.dirname, '../fixtures');
const NAMES = ['mlp_adam', 'resnet18_sgd'] as const;
const pickle = (name: string) => readFileSync(path.join(FIX, 'torch', `${name}.pickle`));
const want = (name: string) => JSON.parse(readFileSync(path.join(FIX, 'torch', `${name}.stats.json`), 'utf8'));

let host: Host;
let nextId = 1;
let uploadSeq = 0;

async function call<T = any>(method: string, params?: unknown): Promise<T> {
  const raw = { id: nextId++, method, params };
  // What a transport would carry: it must fit one message.
  expect(JSON.stringify(raw).length).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
  const res = await host.handle(raw, 'websocket');
  if (!res.ok) throw new Error(`${res.error.code}: ${res.error.message}`);
  return res.result as T;
}

async function failure(method: string, params?: unknown): Promise<{ code: string; message: string }> {
  const res = await host.handle({ id: nextId++, method, params }, 'ipc');
  expect(res.ok).toBe(false);
  return (res as { error: { code: string; message: string } }).error;
}

function chunks(data: Buffer, size = SNAPSHOT_CHUNK_BYTES): string[] {
  const out: string[] = [];
  for (let at = 0; at < data.length; at += size) out.push(data.subarray(at, at + size).toString('base64'));
  return out.length ? out : [''];
}

async function upload(data: Buffer, name: string, order?: (n: number) => number[]): Promise<SnapSummary> {
  const uploadId = `u${++uploadSeq}`;
  const parts = chunks(data);
  const seq = order ? order(parts.length) : parts.map((_, i) => i);
  let last: any;
  for (const [k, i] of seq.entries()) {
    last = await call('snapshot.upload', { uploadId, index: i, total: parts.length, chunk: parts[i], name });
    if (k < seq.length - 1) expect(last).toEqual({ done: false, uploadId, received: k + 1, total: parts.length });
  }
  expect(last.done).toBe(true);
  return last.snapshot;
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  host = new Host(native);
  registerSnapshotMethods(host, native);
  for (const n of NAMES) ids[n] = (await upload(pickle(n), `${n}.pickle`)).id;
});
afterAll(() => host.dispose());

describe('snapshot.upload', () => {
  it('reassembles a file sent in chunks, in any order, and summarises it', async () => {
    const data = pickle('resnet18_sgd');
    expect(data.length).toBeGreaterThan(SNAPSHOT_CHUNK_BYTES); // really more than one chunk
    const reversed = await upload(data, 'resnet18_sgd.pickle', (n) => [...Array(n).keys()].reverse());
    const s = loadSnapshotFile(path.join(FIX, 'torch', 'resnet18_sgd.pickle'));
    const st = traceStats(s, 0);
    expect(reversed).toMatchObject({
      name: 'resnet18_sgd.pickle',
      bytes: data.length,
      devices: [0],
      device: 0,
      segments: s.segments.length,
      traceLength: s.deviceTraces[0].length,
      lateStart: false,
      peakReserved: st.peakReserved,
      peakAllocated: st.peakAllocated,
      durationUs: s.deviceTraces[0].at(-1)!.timeUs - s.deviceTraces[0][0].timeUs,
    });
    expect(reversed.peakReserved.bytes).toBe(want('resnet18_sgd').peak_reserved);
    expect(reversed.counts.segment_alloc).toBe(want('resnet18_sgd').num_device_alloc);
    expect(reversed.allocatorSettings).toMatchObject({ conf: '', effectiveConf: '', expandableSegments: false, maxSplitSize: null });
    expect(reversed.id).not.toBe(ids.resnet18_sgd);
    await call('snapshot.close', { id: reversed.id });
  });

  it('gives each chunk message room on the 1 MiB transports', () => {
    expect(SNAPSHOT_CHUNK_CHARS).toBe(512 * 1024);
    expect(SNAPSHOT_CHUNK_CHARS + 1000).toBeLessThan(MAX_MESSAGE_BYTES);
  });

  it('refuses malformed chunks with clear errors', async () => {
    expect((await failure('snapshot.upload', { uploadId: 'x', index: 0, total: 1, chunk: 'not base64!' })).message).toMatch(
      /chunk is not base64/,
    );
    expect((await failure('snapshot.upload', { uploadId: 'x', index: 2, total: 2, chunk: '' })).message).toMatch(
      /index must be below total/,
    );
    expect((await failure('snapshot.upload', { uploadId: '../x', index: 0, total: 1, chunk: '' })).code).toBe('invalid_params');
    expect(
      (await failure('snapshot.upload', { uploadId: 'x', index: 0, total: 1, chunk: 'A'.repeat(SNAPSHOT_CHUNK_CHARS + 4) })).code,
    ).toBe('invalid_params');
    await call('snapshot.upload', { uploadId: 'tot', index: 0, total: 3, chunk: 'AAAA' });
    expect((await failure('snapshot.upload', { uploadId: 'tot', index: 1, total: 2, chunk: 'AAAA' })).message).toMatch(
      /says 2 chunks, earlier chunks said 3/,
    );
  });

  it("reports the reader's error for a malformed or hostile pickle, and keeps serving", async () => {
    const evil = readFileSync(path.join(FIX, 'snapshot', 'evil_global_reduce.pickle'));
    const e1 = await failure('snapshot.upload', {
      uploadId: 'evil',
      index: 0,
      total: 1,
      chunk: evil.toString('base64'),
      name: 'evil.pickle',
    });
    expect(e1.code).toBe('failed');
    expect(e1.message).toMatch(/^evil\.pickle is not a PyTorch memory snapshot vramlab can read: .*GLOBAL|REDUCE/);
    const truncated = pickle('mlp_adam').subarray(0, 5000);
    const e2 = await failure('snapshot.upload', {
      uploadId: 'trunc',
      index: 0,
      total: 1,
      chunk: truncated.toString('base64'),
      name: 'cut.pickle',
    });
    expect(e2.message).toMatch(/cut\.pickle is not a PyTorch memory snapshot vramlab can read: pickle: .*only \d+ bytes follow/);
    const notSnapshot = Buffer.from([0x80, 0x04, 0x4b, 0x2a, 0x2e]); // pickle of the int 42
    const e3 = await failure('snapshot.upload', {
      uploadId: 'int',
      index: 0,
      total: 1,
      chunk: notSnapshot.toString('base64'),
      name: '42.pickle',
    });
    expect(e3.message).toMatch(/42\.pickle is not a PyTorch memory snapshot/);
    expect((await call<SnapSummary[]>('snapshot.list')).map((s) => s.id)).toEqual(expect.arrayContaining([ids.mlp_adam, ids.resnet18_sgd]));
  });

  it('evicts the least recently used snapshot past the cap', async () => {
    const h = new Host(native);
    const small = pickle('mlp_adam');
    const store = registerSnapshotMethods(h, native, { limits: { maxBytes: small.length * 2 + 10, maxEntries: 5 } });
    const send = async (uploadId: string) => {
      const r = await h.handle(
        { id: 1, method: 'snapshot.upload', params: { uploadId, index: 0, total: 1, chunk: small.toString('base64') } },
        'ipc',
      );
      return (r as any).result.snapshot.id as string;
    };
    const a = await send('a');
    const b = await send('b');
    await h.handle({ id: 2, method: 'snapshot.largest', params: { id: a } }, 'ipc'); // a is now the most recent
    const c = await send('c');
    expect(store.has(a)).toBe(true);
    expect(store.has(b)).toBe(false);
    expect(store.has(c)).toBe(true);
    const gone = await h.handle({ id: 3, method: 'snapshot.timeline', params: { id: b } }, 'ipc');
    expect(gone).toMatchObject({ ok: false, error: { code: 'failed' } });
    expect((gone as any).error.message).toMatch(/no open snapshot .*evicted/);
    h.dispose();
  });
});

describe('the upload store', () => {
  it('forgets idle uploads and the oldest when too many are in flight', () => {
    let now = 0;
    const store = new SnapshotStore<null>({ uploadIdleMs: 1000, maxUploads: 2 }, () => now);
    const b = Buffer.from('abc');
    expect(store.addChunk('a', 0, 2, b, 'a')).toBeNull();
    now = 500;
    expect(store.addChunk('b', 0, 2, b, 'b')).toBeNull();
    expect(store.addChunk('c', 0, 2, b, 'c')).toBeNull(); // a is dropped: at most 2 in flight
    expect(store.progress('a')).toBeNull();
    expect(store.progress('b')).toEqual({ received: 1, total: 2 });
    now = 2000; // b and c idle for more than 1 s
    expect(store.addChunk('d', 0, 1, b, 'd')).toEqual(b);
    expect(store.progress('b')).toBeNull();
    expect(store.progress('c')).toBeNull();
    // A repeated chunk replaces the earlier one; the file is the chunks in index order.
    store.addChunk('e', 1, 2, Buffer.from('XY'), 'e');
    store.addChunk('e', 1, 2, Buffer.from('yz'), 'e');
    expect(store.addChunk('e', 0, 2, Buffer.from('wx'), 'e')!.toString()).toBe('wxyz');
  });
});

describe('snapshot.timeline', () => {
  for (const n of NAMES) {
    it(`${n}: stacks the largest allocations under the allocated line, within maxPoints`, async () => {
      const t = await call('snapshot.timeline', { id: ids[n], maxPoints: 200, maxAllocations: 30 });
      const st = traceStats(loadSnapshotFile(path.join(FIX, 'torch', `${n}.pickle`)), 0);
      expect(t.points.eventIndex.length).toBeLessThanOrEqual(200);
      expect(t.points.eventIndex[0]).toBe(-1);
      // Decimation keeps the peaks.
      expect(Math.max(...t.points.allocated)).toBe(st.peakAllocated.bytes);
      expect(Math.max(...t.points.reserved)).toBe(st.peakReserved.bytes);
      expect(t.points.eventIndex).toContain(st.peakAllocated.eventIndex);
      expect(t.allocations.length).toBeGreaterThan(0);
      expect(t.allocations.length).toBeLessThanOrEqual(30);
      // Every point: other band + the stacked bands = allocated, bands never overlap.
      const P = t.points.eventIndex.length;
      for (let p = 0; p < P; p++) {
        const here = t.allocations
          .filter((a: any) => p >= a.first && p < a.first + a.offsets.length)
          .map((a: any) => ({ lo: a.offsets[p - a.first], hi: a.offsets[p - a.first] + a.size }))
          .sort((x: any, y: any) => x.lo - y.lo);
        let top = t.other[p];
        expect(top).toBeGreaterThanOrEqual(0);
        for (const band of here) {
          expect(band.lo).toBe(top);
          top = band.hi;
        }
        expect(top).toBe(t.points.allocated[p]);
      }
      // The largest allocation has its band and its frames for the hover.
      const big = Math.max(...t.allocations.map((a: any) => a.size));
      expect(big).toBe(st.largest[0].size);
      const a0 = t.allocations.find((a: any) => a.size === big);
      expect(t.stacks[a0.stack].length).toBeGreaterThan(0);
      expect(t.stacks[a0.stack]).toEqual(
        st.largest.find((l) => l.allocIndex === a0.allocIndex)!.frames.map((f) => (f.length > 240 ? `${f.slice(0, 239)}…` : f)),
      );
    });
  }

  it('refuses an unknown device and bad limits', async () => {
    expect((await failure('snapshot.timeline', { id: ids.mlp_adam, device: 3 })).message).toMatch(/has no device 3; it has device 0/);
    expect((await failure('snapshot.timeline', { id: ids.mlp_adam, maxPoints: 1 })).code).toBe('invalid_params');
    expect((await failure('snapshot.timeline', { id: 'nope' })).message).toMatch(/no open snapshot "nope"/);
  });
});

describe('snapshot.stateAt', () => {
  for (const n of NAMES) {
    it(`${n}: at the last event, the segments and blocks are the snapshot's own`, async () => {
      const s = loadSnapshotFile(path.join(FIX, 'torch', `${n}.pickle`));
      const last = s.deviceTraces[0].length - 1;
      const st = await call('snapshot.stateAt', { id: ids[n], eventIndex: last });
      expect(st.event.index).toBe(last);
      expect(st.segments.map((g: any) => [g.address, g.size, g.pool])).toEqual(
        [...s.segments].sort((a, b) => a.address - b.address).map((g) => [g.address, g.totalSize, g.segmentType]),
      );
      for (const g of s.segments) {
        const mine = st.segments.find((x: any) => x.address === g.address);
        const theirs = g.blocks.map((b) => [
          b.address,
          b.size,
          b.state === 'inactive' ? 'free' : b.state === 'active_pending_free' ? 'pending_free' : 'allocated',
        ]);
        expect(mine.blocks.map((b: any) => [b.address, b.size, b.state])).toEqual(theirs);
      }
      expect(st.reserved).toBe(s.segments.reduce((a, g) => a + g.totalSize, 0));
    });
  }

  it('before the first event nothing is reserved (the fixtures start with the process)', async () => {
    const st = await call('snapshot.stateAt', { id: ids.mlp_adam, eventIndex: -1 });
    expect(st).toMatchObject({ eventIndex: -1, event: null, reserved: 0, allocated: 0, segments: [] });
  });

  it('at the peak, reserved and the gap match the trace statistics', async () => {
    const s = loadSnapshotFile(path.join(FIX, 'torch', 'resnet18_sgd.pickle'));
    const stats = traceStats(s, 0);
    const at = await call('snapshot.stateAt', { id: ids.resnet18_sgd, eventIndex: stats.peakReserved.eventIndex });
    expect(at.reserved).toBe(stats.peakReserved.bytes);
    const sumBlocks = at.segments.flatMap((g: any) => g.blocks).reduce((a: number, b: any) => a + b.size, 0);
    expect(sumBlocks).toBe(at.reserved); // blocks tile their segments
    expect(at.inactiveSplit + at.cachedFree).toBeLessThanOrEqual(at.reserved - at.allocated);
  });

  it('refuses an index past the end', async () => {
    expect((await failure('snapshot.stateAt', { id: ids.mlp_adam, eventIndex: 10_000 })).message).toMatch(
      /past the trace's end: it has 525 events/,
    );
    expect((await failure('snapshot.stateAt', { id: ids.mlp_adam, eventIndex: -2 })).code).toBe('invalid_params');
  });
});

describe('a trace that started late (history enabled mid-run)', () => {
  it('draws, scrubs and replays what was alive before its first event', async () => {
    const s = loadSnapshotFile(path.join(FIX, 'torch', 'mlp_adam.pickle'));
    const cut = 200;
    s.deviceTraces[0] = s.deviceTraces[0].slice(cut);
    const late = await upload(snapshotToBytes(s), 'late.pickle');
    expect(late.lateStart).toBe(true);
    expect(late.traceLength).toBe(525 - cut);
    expect(late.initial.reserved).toBeGreaterThan(0);

    const t = await call('snapshot.timeline', { id: late.id, maxPoints: 100 });
    expect(t.points.allocated[0]).toBe(late.initial.allocated);
    expect(t.points.reserved[0]).toBe(late.initial.reserved);
    expect(t.allocations.some((a: any) => a.allocIndex === -1 && a.first === 0)).toBe(true);
    expect(t.other[0] + t.allocations.filter((a: any) => a.first === 0).reduce((n: number, a: any) => n + a.size, 0)).toBe(
      late.initial.allocated,
    );

    const before = await call('snapshot.stateAt', { id: late.id, eventIndex: -1 });
    expect(before.reserved).toBe(late.initial.reserved);
    expect(before.allocated).toBe(late.initial.allocated);
    // At the end it is still the snapshot's own state.
    const end = await call('snapshot.stateAt', { id: late.id, eventIndex: late.traceLength - 1 });
    expect(end.segments.map((g: any) => g.size)).toEqual([...s.segments].sort((a, b) => a.address - b.address).map((g) => g.totalSize));

    // Replay re-creates the live allocations first: the run still fits on the whole device.
    const w = await call('snapshot.whatIf', { id: late.id, allocConf: '' });
    expect(w.whatIf.oom).toBeNull();
    expect(w.whatIf.peakAllocated).toBeGreaterThanOrEqual(late.initial.allocated); // block sizes >= requested
    await call('snapshot.close', { id: late.id });
  });
});

describe('snapshot.largest', () => {
  it('lists the largest allocations with their frames, largest first', async () => {
    const r = await call('snapshot.largest', { id: ids.mlp_adam, top: 5 });
    expect(r.allocations).toHaveLength(5);
    const sizes = r.allocations.map((a: any) => a.size);
    expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
    expect(sizes[0]).toBe(64 << 20);
    expect(r.allocations.some((a: any) => a.frames.some((f: string) => f.includes('linear.py')))).toBe(true);
  });
});

describe('snapshot.whatIf and snapshot.grid', () => {
  for (const n of NAMES) {
    it(`${n}: the default settings reproduce PyTorch's own run exactly`, async () => {
      const w = await call('snapshot.whatIf', { id: ids[n], allocConf: '' });
      const ref = want(n);
      expect(w.recorded).toMatchObject({
        peakReserved: ref.peak_reserved,
        numDeviceAlloc: ref.num_device_alloc,
        numDeviceFree: ref.num_device_free,
      });
      expect(w.whatIf).toMatchObject({
        peakReserved: ref.peak_reserved,
        numDeviceAlloc: ref.num_device_alloc,
        numDeviceFree: ref.num_device_free,
        oom: null,
      });
      expect(w.original).toEqual(w.whatIf); // the fixtures ran with no PYTORCH_CUDA_ALLOC_CONF
    });
  }

  it('expandable_segments under a capacity below the peak: side by side, with the OOM located in the trace', async () => {
    const ref = want('resnet18_sgd');
    // Less than the run ever had allocated at once: no settings can fit it.
    const cap = Math.floor(ref.peak_allocated * 0.95);
    const w = await call('snapshot.whatIf', { id: ids.resnet18_sgd, allocConf: 'expandable_segments:True', capacity: cap });
    expect(w.capacity).toBe(cap);
    expect(w.original.allocConf).toBe('');
    expect(w.whatIf.allocConf).toBe('expandable_segments:True');
    for (const o of [w.original, w.whatIf]) {
      expect(o.oom).not.toBeNull();
      expect(o.oom.message).toMatch(/out of memory/i);
      expect(o.oom.eventIndex).toBeGreaterThanOrEqual(0);
      expect(o.oom.size).toBeGreaterThan(0);
      expect(o.oom.frames.length).toBeGreaterThan(0);
      expect(o.fragmentation).not.toBeNull();
    }
    expect(w.original.peakReserved).toBeLessThanOrEqual(cap);
    expect(w.whatIf.numDeviceAlloc).not.toBe(w.original.numDeviceAlloc); // a different allocator really ran
  });

  it('takes capacities as sizes people type and refuses nonsense', async () => {
    const w = await call('snapshot.whatIf', { id: ids.mlp_adam, allocConf: 'max_split_size_mb:256', capacity: '24GiB' });
    expect(w.capacity).toBe(24 * 2 ** 30);
    expect(w.whatIf.oom).toBeNull();
    expect((await failure('snapshot.whatIf', { id: ids.mlp_adam, allocConf: '', capacity: '24 parsecs' })).message).toMatch(
      /bad size "24 parsecs"/,
    );
    expect((await failure('snapshot.whatIf', { id: ids.mlp_adam, allocConf: '', capacity: -5 })).code).toBe('invalid_params');
    expect((await failure('snapshot.whatIf', { id: ids.mlp_adam, allocConf: 'backend:cudaMallocAsync' })).message).toMatch(
      /cudaMallocAsync/,
    );
    // Refused with the allocator parser's reasons, and the host lives on.
    const refused: Array<[string, RegExp]> = [
      ['no_such_option:7', /Unrecognized key 'no_such_option'/],
      ['garbage_collection_threshold:1.5', /must be in \(0\.0, 1\.0\)/],
      ['max_split_size_mb:4', /too small, must be >= 20/],
      ['expandable_segments:yes', /expected 'True' or 'False' but found 'yes'/],
      ['roundup_power2_divisions:3', /power of 2, got 3/],
      ['expandable_segments', /expected ':' but the string ended/],
    ];
    for (const [conf, why] of refused) {
      const bad = await failure('snapshot.whatIf', { id: ids.mlp_adam, allocConf: conf });
      expect(bad.code).toBe('failed');
      expect(bad.message).toMatch(why);
    }
    expect(
      (
        await call('snapshot.whatIf', {
          id: ids.mlp_adam,
          allocConf: 'roundup_power2_divisions:[256:1,512:2,>:4], expandable_segments:False',
        })
      ).whatIf.oom,
    ).toBeNull();
  });

  it('grid: every settings string at every capacity', async () => {
    const settings = ['', 'expandable_segments:True', 'max_split_size_mb:256', 'garbage_collection_threshold:0.8'];
    const g = await call('snapshot.grid', { id: ids.mlp_adam, settings, capacities: [null, '300MiB', 2 ** 30] });
    expect(g.capacities).toEqual([null, 300 * 2 ** 20, 2 ** 30]);
    expect(g.cells).toHaveLength(4);
    for (const row of g.cells) expect(row).toHaveLength(3);
    expect(g.cells[0][0].peakReserved).toBe(want('mlp_adam').peak_reserved);
    // 300 MiB is below what the recorded run needed: the default settings must fail there.
    expect(g.cells[0][1].oom).not.toBeNull();
    expect(g.cells[1][0].allocConf).toBe('expandable_segments:True');
    expect((await failure('snapshot.grid', { id: ids.mlp_adam, settings: [], capacities: [null] })).code).toBe('invalid_params');
  });
});

describe('the native settings parser never takes the process down', () => {
  const CONFS = [
    '',
    'expandable_segments:True',
    'expandable_segments:False,max_split_size_mb:256',
    ' max_split_size_mb : 20 ',
    'max_split_size_mb:19',
    'large_segment_size_mb:64,max_split_size_mb:32',
    'large_segment_size_mb:10',
    'garbage_collection_threshold:0.8',
    'garbage_collection_threshold:1',
    'garbage_collection_threshold:abc',
    'roundup_power2_divisions:4',
    'roundup_power2_divisions:3',
    'roundup_power2_divisions:[256:1,512:2,>:4]',
    'roundup_power2_divisions:[3:1]',
    'roundup_power2_divisions:[256:1',
    'backend:native',
    'backend:cudaMallocAsync',
    'release_lock_on_cudamalloc:True,pinned_num_register_threads:8',
    'pinned_num_register_threads:6',
    'per_process_memory_fraction:0.5',
    'per_process_memory_fraction:1.5',
    'expandable_segments:True,',
    'expandable_segments',
    'expandable_segments:yes',
    'no_such_key:1',
    'max_split_size_mb:-5',
  ];
  const addon = addonCandidates().find((p) => existsSync(p))!;
  // Each in a child process, so a native abort would show as a crash instead of killing the run.
  const probe = `const a = require(process.argv[1]);
    if (typeof a.replayAllocator !== 'function') process.exit(3);
    try {
      a.replayAllocator(new Uint8Array(0), new Float64Array(0), new Uint32Array(0), new Uint32Array(0), { settings: process.argv[2] });
    } catch (e) { process.stdout.write(String(e.message)); process.exit(1); }`;

  it.each(CONFS)('%j is accepted or refused with a JS error, never a crash', (conf) => {
    const child = spawnSync(process.execPath, ['-e', probe, addon, conf], { encoding: 'utf8', cwd: tmpdir() });
    if (child.status === 3) throw new Error('this addon has no replayAllocator(): build one with the allocator code');
    expect(child.signal).toBeNull();
    expect([0, 1]).toContain(child.status);
    if (child.status === 1) expect(child.stdout).toMatch(/\S/);
  });
});
