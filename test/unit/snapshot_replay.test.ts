import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../main/cli/main';
import type { CliIO } from '../../main/cli/io';
import { loadSnapshotFile } from '../../main/snapshot/import';
import type { Snapshot, TraceEvent } from '../../main/snapshot/model';
import { hasNativeReplay } from '../../main/snapshot/replay';
import { parseSize } from '../../main/snapshot/sizes';
import { REPLAY_ALLOC, REPLAY_EMPTY_CACHE, REPLAY_FREE, classifyRelease, snapshotToReplay } from '../../main/snapshot/to_replay';

const FIX = path.resolve(__dirname, '../fixtures');
const NAMES = ['mlp_adam', 'resnet18_sgd'];
const file = (name: string) => path.join(FIX, 'torch', `${name}.pickle`);

function capture(): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => (out += t), err: (t) => (err += t), stdout: () => out, stderr: () => err };
}

describe('snapshot -> replay arrays', () => {
  it('mlp_adam: one alloc per alloc event (requested size), one free per free_completed, one empty_cache', () => {
    const s = loadSnapshotFile(file('mlp_adam'));
    const t = snapshotToReplay(s, 0);
    const events = s.deviceTraces[0];
    const count = (op: number) => t.ops.filter((o) => o === op).length;
    expect(count(REPLAY_ALLOC)).toBe(events.filter((e) => e.action === 'alloc').length);
    expect(count(REPLAY_FREE)).toBe(events.filter((e) => e.action === 'free_completed').length);
    // The fixture's nine segment_free events are one empty_cache() call (stack says emptyCache).
    expect(count(REPLAY_EMPTY_CACHE)).toBe(1);
    expect(t.emptyCacheCalls).toBe(1);
    expect(t.internalReleases).toBe(0);
    expect(t.lateStart).toBe(false);
    expect(t.unmatchedFrees).toBe(0);
    expect(t.segmentAddresses.length).toBe(events.filter((e) => e.action === 'segment_alloc').length);
    // Every op points back at its event, and sizes are the recorded (unrounded) request.
    for (let i = 0; i < t.count; i++) {
      const e = events[t.eventIndex[i]];
      if (t.ops[i] === REPLAY_ALLOC) {
        expect(e.action).toBe('alloc');
        expect(Number(t.sizes[i])).toBe(e.size);
      }
    }
    // Frees name the id their alloc got.
    const live = new Set<number>();
    for (let i = 0; i < t.count; i++) {
      if (t.ops[i] === REPLAY_ALLOC) live.add(t.ids[i]);
      if (t.ops[i] === REPLAY_FREE) expect(live.delete(t.ids[i])).toBe(true);
    }
  });

  it('a late trace starts from the seeded state: live allocations get ids, not ops', () => {
    const s = loadSnapshotFile(file('resnet18_sgd'));
    const k = 1000;
    const late: Snapshot = { ...s, deviceTraces: [s.deviceTraces[0].slice(k)] };
    const t = snapshotToReplay(late, 0);
    expect(t.lateStart).toBe(true);
    expect(t.initialAllocs).toBeGreaterThan(0);
    expect(t.unmatchedFrees).toBe(0);
    expect(t.seed).not.toBeNull();
    expect([...t.seed!.blockId].filter((id) => id > 0).length).toBe(t.initialAllocs);
    for (let i = 0; i < t.count; i++) expect(t.eventIndex[i]).toBeGreaterThanOrEqual(0);
  });

  it('segment_free bursts: empty_cache vs the allocator freeing cache for a retry', () => {
    const ev = (action: TraceEvent['action'], frames: string[] = []): TraceEvent => ({
      action,
      addr: 1,
      size: 2,
      stream: 0,
      timeUs: 0,
      frames: frames.map((name) => ({ name, filename: '', line: 0 })),
    });
    const retry = ['c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)'];
    expect(classifyRelease([ev('segment_free', retry), ev('segment_alloc'), ev('alloc')], 0).kind).toBe('internal');
    expect(classifyRelease([ev('segment_free', ['NativeCachingAllocator::emptyCache()']), ev('segment_alloc')], 0).kind).toBe(
      'empty_cache',
    );
    // Without stacks: a segment_alloc right after means a retry; an alloc or the end means empty_cache.
    expect(classifyRelease([ev('segment_free'), ev('segment_free'), ev('segment_alloc')], 0)).toEqual({ kind: 'internal', end: 2 });
    expect(classifyRelease([ev('segment_free'), ev('alloc')], 0).kind).toBe('empty_cache');
    expect(classifyRelease([ev('segment_unmap')], 0).kind).toBe('empty_cache');
  });

  it('sizes as people type them', () => {
    expect(parseSize('24GiB')).toBe(24 * 2 ** 30);
    expect(parseSize('24GB')).toBe(24e9);
    expect(parseSize('512MiB')).toBe(512 * 2 ** 20);
    expect(parseSize('1.5 gib')).toBe(1.5 * 2 ** 30);
    expect(parseSize('1048576')).toBe(1048576);
    expect(() => parseSize('24 parsecs')).toThrow(/unknown unit/);
    expect(() => parseSize('-1GB')).toThrow(/bad size/);
  });
});

describe('vramlab snapshot info / export (no native code needed)', () => {
  it('info --json reports the trace statistics', async () => {
    const io = capture();
    expect(await main(['snapshot', 'info', file('mlp_adam'), '--json'], io)).toBe(0);
    const j = JSON.parse(io.stdout());
    const want = JSON.parse(readFileSync(path.join(FIX, 'torch/mlp_adam.stats.json'), 'utf8'));
    expect(j.peakReserved.bytes).toBe(want.peak_reserved);
    expect(j.counts.segment_alloc).toBe(want.num_device_alloc);
  });

  it('a forged pickle is refused with the opcode named, exit code 1', async () => {
    const io = capture();
    expect(await main(['snapshot', 'info', path.join(FIX, 'snapshot/evil_global_reduce.pickle')], io)).toBe(1);
    expect(io.stderr()).toMatch(/GLOBAL .* at offset 0: refused/);
    const io2 = capture();
    expect(await main(['replay', path.join(FIX, 'snapshot/evil_stack_global.pickle'), '--json'], io2)).toBe(1);
    expect(io2.stderr()).toMatch(/STACK_GLOBAL/);
  });

  it('usage errors exit 2', async () => {
    const io = capture();
    expect(await main(['replay'], io)).toBe(2);
    expect(await main(['replay', file('mlp_adam'), '--capacity', 'lots'], io)).toBe(2);
    expect(await main(['replay', file('mlp_adam'), '--capacity', '1GiB', '--capacity', '2GiB'], io)).toBe(2);
    expect(await main(['snapshot', 'export', 'x'], io)).toBe(2);
  });
});

// The replay needs the native addon's replayAllocator (native/addon/allocator_binding.cpp).
// Point VRAMLAB_ADDON at a build that has it; without one these tests are skipped, loudly.
const replayReady = hasNativeReplay();
if (!replayReady) console.warn('snapshot_replay: skipping native replay tests: the addon found has no replayAllocator()');

describe.skipIf(!replayReady)('vramlab replay (native allocator)', () => {
  for (const name of NAMES) {
    it(`${name}: replays to PyTorch's own peak_reserved, num_device_alloc and num_device_free`, async () => {
      const io = capture();
      expect(await main(['replay', file(name), '--json'], io)).toBe(0);
      const got = JSON.parse(io.stdout());
      const want = JSON.parse(readFileSync(path.join(FIX, 'torch', `${name}.stats.json`), 'utf8'));
      expect(got.peak_reserved).toBe(want.peak_reserved);
      expect(got.num_device_alloc).toBe(want.num_device_alloc);
      expect(got.num_device_free).toBe(want.num_device_free);
      expect(got.num_ooms).toBe(0);
      expect(got.first_oom).toBe(null);
    });
  }

  it('a capacity below the peak gives an OOM with its event and stack', async () => {
    const io = capture();
    expect(await main(['replay', file('resnet18_sgd'), '--capacity', '512MiB', '--json'], io)).toBe(0);
    const got = JSON.parse(io.stdout());
    expect(got.num_ooms).toBeGreaterThan(0);
    expect(got.first_oom.event_index).toBeGreaterThanOrEqual(0);
    expect(got.first_oom.message).toMatch(/out of memory/i);
    expect(got.peak_reserved).toBeLessThanOrEqual(512 * 2 ** 20);
  });

  it('grid: settings x capacities', async () => {
    const io = capture();
    const args = [
      'replay',
      file('mlp_adam'),
      '--grid',
      '--json',
      '--alloc-conf',
      '',
      '--alloc-conf',
      'expandable_segments:True',
      '--capacity',
      '256MiB',
      '--capacity',
      '1GiB',
    ];
    expect(await main(args, io)).toBe(0);
    const rows = JSON.parse(io.stdout());
    expect(rows).toHaveLength(4);
    expect(rows.filter((r: { capacity: number; num_ooms: number }) => r.capacity === 2 ** 30 && r.num_ooms === 0)).toHaveLength(2);
    expect(rows.filter((r: { capacity: number; num_ooms: number }) => r.capacity === 256 * 2 ** 20 && r.num_ooms > 0)).toHaveLength(2);
  });

  it('export --from-replay writes a snapshot that imports back with the replay trace', async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'vramlab-export-')), 'snapshot-replay-export.pickle');
    const io = capture();
    expect(await main(['snapshot', 'export', '--from-replay', file('mlp_adam'), '-o', out], io)).toBe(0);
    const s = loadSnapshotFile(out);
    const orig = loadSnapshotFile(file('mlp_adam'));
    const count = (x: Snapshot, a: string) => x.deviceTraces[0].filter((e) => e.action === a).length;
    expect(count(s, 'alloc')).toBe(count(orig, 'alloc'));
    expect(count(s, 'segment_alloc')).toBe(count(orig, 'segment_alloc'));
  });
});
