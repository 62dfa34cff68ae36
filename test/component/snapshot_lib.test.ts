// The snapshot screens' pure helpers: timeline geometry and hit-testing, alloc-conf
// presets, base64 chunks.
import { describe, expect, it } from 'vitest';
import type { SnapTimeline } from '../../main/contract/snapshot';
import {
  bandAt,
  bandPolygon,
  bandsAt,
  byteTicks,
  frameFor,
  nearestPoint,
  niceMax,
  xOf,
  yOf,
} from '../../renderer/src/lib/snapshot/timeline';
import { confItems, hasItem, withItem, withoutKey } from '../../renderer/src/lib/snapshot/conf';
import { toBase64 } from '../../renderer/src/lib/snapshot/upload';
import { frameShort, formatDuration } from '../../renderer/src/lib/snapshot/format';

const MiB = 2 ** 20;
// Events: 0 alloc A (4 MiB), 1 alloc B (2 MiB), 2 alloc small (1 MiB, summed), 3 free A, 4 free B.
const t: SnapTimeline = {
  id: 'x',
  device: 0,
  events: 5,
  points: {
    eventIndex: [-1, 0, 1, 2, 3, 4],
    timeUs: [0, 0, 1, 2, 3, 4],
    allocated: [0, 4 * MiB, 6 * MiB, 7 * MiB, 3 * MiB, 1 * MiB],
    reserved: [0, 20 * MiB, 20 * MiB, 22 * MiB, 22 * MiB, 22 * MiB],
  },
  other: [0, 0, 0, MiB, MiB, MiB],
  allocations: [
    { size: 4 * MiB, allocIndex: 0, freeIndex: 3, first: 1, offsets: [0, 0, MiB], stack: 0 },
    { size: 2 * MiB, allocIndex: 1, freeIndex: 4, first: 2, offsets: [4 * MiB, 5 * MiB, MiB], stack: 1 },
  ],
  stacks: [['a.py:1:f'], ['b.py:2:g']],
};

describe('timeline geometry', () => {
  const f = frameFor(t, 600, 300);

  it('scales events and bytes into the plot area', () => {
    expect(xOf(f, -1)).toBe(f.left);
    expect(xOf(f, 4)).toBe(f.right);
    expect(yOf(f, 0)).toBe(f.bottom);
    expect(yOf(f, f.yMax)).toBe(f.top);
    expect(f.yMax).toBeGreaterThanOrEqual(22 * MiB);
  });

  it('reaches a memory cap above the data, so the cap line is in view', () => {
    expect(frameFor(t, 600, 300).yMax).toBeLessThan(64 * MiB);
    const capped = frameFor(t, 600, 300, [64 * MiB]);
    expect(capped.yMax).toBeGreaterThanOrEqual(64 * MiB);
    expect(yOf(capped, 64 * MiB)).toBeGreaterThanOrEqual(capped.top);
  });

  it('names the band under a height at a point', () => {
    expect(bandAt(t, 3, 0.5 * MiB)).toEqual({ kind: 'other', base: 0 });
    expect(bandAt(t, 3, 2 * MiB)).toEqual({ kind: 'allocation', index: 0, base: MiB });
    expect(bandAt(t, 3, 5.5 * MiB)).toEqual({ kind: 'allocation', index: 1, base: 5 * MiB });
    expect(bandAt(t, 3, 7 * MiB)).toEqual({ kind: 'free' });
    // After A is freed, B drops to sit on the small allocations.
    expect(bandAt(t, 4, 1.5 * MiB)).toEqual({ kind: 'allocation', index: 1, base: MiB });
    expect(bandsAt(t, 3)).toEqual([0, 1]);
    expect(bandsAt(t, 5)).toEqual([]);
  });

  it('finds the nearest sampled point', () => {
    expect(nearestPoint(t, -5)).toBe(0);
    expect(nearestPoint(t, 1.4)).toBe(2);
    expect(nearestPoint(t, 2.6)).toBe(4);
    expect(nearestPoint(t, 99)).toBe(5);
  });

  it('outlines a band along its base and back along its top', () => {
    const poly = bandPolygon(t, f, t.allocations[1]);
    expect(poly).toHaveLength(6);
    expect(poly[0]).toEqual([xOf(f, 1), yOf(f, 4 * MiB)]);
    expect(poly[2]).toEqual([xOf(f, 3), yOf(f, MiB)]);
    expect(poly[3]).toEqual([xOf(f, 3), yOf(f, 3 * MiB)]);
    expect(poly[5]).toEqual([xOf(f, 1), yOf(f, 6 * MiB)]);
  });

  it('rounds the axis to even steps of binary units', () => {
    expect(niceMax(1000 * MiB)).toBe(1024 * MiB);
    expect(niceMax(300 * MiB)).toBe(320 * MiB);
    expect(byteTicks(1024 * MiB)).toEqual([0, 256, 512, 768, 1024].map((m) => m * MiB));
  });
});

describe('alloc conf presets', () => {
  it('sets, finds and removes a key, keeping the others and bracketed lists whole', () => {
    const c = 'roundup_power2_divisions:[256:1,>:4],max_split_size_mb:128';
    expect(confItems(c)).toEqual(['roundup_power2_divisions:[256:1,>:4]', 'max_split_size_mb:128']);
    expect(withItem(c, 'max_split_size_mb:256')).toBe('roundup_power2_divisions:[256:1,>:4],max_split_size_mb:256');
    expect(withItem('', 'expandable_segments:True')).toBe('expandable_segments:True');
    expect(hasItem('expandable_segments: True', 'expandable_segments:True')).toBe(true);
    expect(withoutKey(c, 'roundup_power2_divisions:1')).toBe('max_split_size_mb:128');
  });
});

describe('format and encoding', () => {
  it('base64 of any bytes, in pieces as large as the chunks', () => {
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 7919) % 256);
    expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
    expect(toBase64(new Uint8Array())).toBe('');
  });

  it('names a Python frame by function, file and line', () => {
    expect(frameShort('/opt/venv/torch/nn/modules/linear.py:134:forward')).toBe('forward (linear.py:134)');
    expect(frameShort('at::native::foo()')).toBe('at::native::foo()');
    expect(formatDuration(637_400)).toBe('637.4 ms');
    expect(formatDuration(2_500_000)).toBe('2.50 s');
  });
});
