// Rebuilding the allocator's segments from a trace: the fragmentation scenario of
// test/refs (1000 MiB segment, five 200 MiB parts, 0/2/4 freed) leaves 600 MiB cached in
// three separate holes, none large enough for 400 MiB.
import { describe, expect, it } from 'vitest';
import { SegmentReplay, segmentsAt } from '../../renderer/src/lib/segments';
import type { AllocatorEvent } from '../../main/contract/runs';

const MiB = 1 << 20;
const ev = (t: number, action: string, addr: number, size: number, category: AllocatorEvent['category'] = ''): AllocatorEvent => ({
  t,
  action,
  addr,
  size,
  category,
  module: '',
});

describe('segmentsAt', () => {
  const base = 0x7f0000000000;
  const trace: AllocatorEvent[] = [
    ev(0, 'segment_alloc', base, 1000 * MiB),
    ev(1, 'alloc', base, 1000 * MiB, 'temporaries'),
    ev(2, 'free_completed', base, 1000 * MiB),
    ...[0, 1, 2, 3, 4].map((i) => ev(3 + i, 'alloc', base + i * 200 * MiB, 200 * MiB, 'activations')),
    ...[0, 2, 4].map((i) => ev(10 + i, 'free_completed', base + i * 200 * MiB, 200 * MiB)),
    ev(20, 'segment_alloc', base + 2000 * MiB, 2 * MiB),
    ev(21, 'alloc', base + 2000 * MiB, 512, 'inputs'),
  ];

  it('shows the holes that cause the OOM', () => {
    const s = segmentsAt(trace, 15);
    expect(s.segments).toHaveLength(1);
    expect(s.reserved).toBe(1000 * MiB);
    expect(s.allocated).toBe(400 * MiB);
    expect(s.inactiveSplit).toBe(600 * MiB);
    expect(s.largestFree).toBe(200 * MiB);
    expect(s.segments[0].blocks.map((b) => b.allocated)).toEqual([false, true, false, true, false]);
  });

  it('counts a segment with nothing allocated as cached-free, and tells the pools apart', () => {
    expect(segmentsAt(trace, 2).cachedFree).toBe(1000 * MiB);
    const s = segmentsAt(trace, 30);
    expect(s.segments.map((g) => g.pool)).toEqual(['large', 'small']);
    expect(s.segments[1].blocks[0]).toMatchObject({ allocated: true, size: 512, category: 'inputs' });
  });

  it('rounds traced request sizes up to the 512-byte blocks the allocator hands out', () => {
    const s = segmentsAt(
      [ev(0, 'segment_alloc', base, 2 * MiB), ev(1, 'alloc', base, 1000, 'temporaries'), ev(2, 'alloc', base + 1024, 1, 'inputs')],
      5,
    );
    expect(s.segments[0].blocks.slice(0, 2).map((b) => b.size)).toEqual([1024, 512]);
    expect(s.allocated).toBe(1536);
  });

  it("draws a 1 MiB + 1 request at the allocator's block size, unsplit remainder included", () => {
    // 20 MiB large-pool segment: an 18.5 MiB block leaves 1.5 MiB; a 1 MiB + 1 request rounds
    // to 1 MiB + 512 and the 0.5 MiB - 512 left is too small to split (<= 1 MiB), so the
    // allocator hands out the whole 1.5 MiB block (PyTorch's should_split).
    const big = { ...ev(1, 'alloc', base, 18.5 * MiB, 'activations'), blockSize: 18.5 * MiB };
    const odd = { ...ev(2, 'alloc', base + 18.5 * MiB, MiB + 1, 'activations'), blockSize: 1.5 * MiB, op: 'addmm', module: 'layers.0' };
    const s = segmentsAt([ev(0, 'segment_alloc', base, 20 * MiB), big, odd], 5);
    expect(s.segments[0].blocks.map((b) => [b.allocated, b.size])).toEqual([
      [true, 18.5 * MiB],
      [true, 1.5 * MiB],
    ]);
    expect(s.segments[0].blocks[1]).toMatchObject({ requested: MiB + 1, op: 'addmm', module: 'layers.0' });
    expect(s.allocated).toBe(20 * MiB);
    expect(s.inactiveSplit).toBe(0);
    expect(s.largestFree).toBe(0);
    // A fresh segment splits: the block is the rounded request and the rest is free.
    const fresh = segmentsAt([ev(0, 'segment_alloc', base, 20 * MiB), { ...ev(1, 'alloc', base, MiB + 1), blockSize: MiB + 512 }], 5);
    expect(fresh.segments[0].blocks.map((b) => [b.allocated, b.size])).toEqual([
      [true, MiB + 512],
      [false, 19 * MiB - 512],
    ]);
    // Runs stored before blockSize was sent: the rounded request, the remainder shown free.
    const old = segmentsAt([ev(0, 'segment_alloc', base, 20 * MiB), big, { ...odd, blockSize: undefined }], 5);
    expect(old.segments[0].blocks.map((b) => b.size)).toEqual([18.5 * MiB, MiB + 512, 0.5 * MiB - 512]);
  });

  it('drops a freed segment', () => {
    const s = segmentsAt(
      [...trace, ev(40, 'free_completed', base + 2000 * MiB, 512), ev(41, 'segment_free', base + 2000 * MiB, 2 * MiB)],
      50,
    );
    expect(s.segments).toHaveLength(1);
  });

  it('a replay that follows a growing trace (a live run) shows what a full replay shows at every step', () => {
    // Allocations and frees over a few segments, one of them freed and one an expandable range that grows.
    const events: AllocatorEvent[] = [];
    let t = 0;
    events.push(ev(t++, 'segment_alloc', base, 20 * MiB), ev(t++, 'segment_map', base + 100 * MiB, 4 * MiB));
    for (let i = 0; i < 40; i++) {
      events.push(ev(t++, 'alloc', base + (i % 10) * MiB, MiB, 'activations'));
      if (i % 3 === 0) events.push(ev(t++, 'free_completed', base + (i % 10) * MiB, MiB));
      if (i === 20)
        events.push(ev(t++, 'segment_map', base + 104 * MiB, 2 * MiB), ev(t++, 'alloc', base + 103 * MiB, 2 * MiB, 'temporaries'));
      if (i === 30) events.push(ev(t++, 'segment_alloc', base + 300 * MiB, 2 * MiB), ev(t++, 'alloc', base + 300 * MiB, 512, 'inputs'));
      if (i === 35) events.push(ev(t++, 'free_completed', base + 300 * MiB, 512), ev(t++, 'segment_free', base + 300 * MiB, 2 * MiB));
    }
    const replay = new SegmentReplay();
    const live: AllocatorEvent[] = [];
    for (let n = 0; n < events.length; n += 7) {
      live.push(...events.slice(n, n + 7)); // a batch arrives
      const time = live[live.length - 1].t - 2; // the last sample can lag the last event
      expect(replay.advance(live, time)).toEqual(segmentsAt(live, time));
    }
    expect(replay.advance(live, Infinity)).toEqual(segmentsAt(events, Infinity));
    // Back in time, or a trace replaced by a shorter one (a reloaded run): replayed afresh.
    expect(replay.advance(live, 10)).toEqual(segmentsAt(events, 10));
    live.length = 5;
    expect(replay.advance(live, Infinity)).toEqual(segmentsAt(events.slice(0, 5), Infinity));
  });
});
