// A run's timeline as the chart reads it, built from contract-shaped progress batches.
import { describe, expect, it } from 'vitest';
import { CATEGORIES } from '../../main/contract/runs';
import { categoryLabel, RunSeries } from '../../renderer/src/lib/series';
import type { MemorySample, RunEvent } from '../../main/contract/runs';

const sample = (t: number, allocated: number, reserved = allocated + 100): MemorySample => ({
  t,
  allocated,
  reserved,
  active: allocated,
  requested: allocated,
  by: [10, 20, 30, allocated - 60, 0, 0, 0, 0],
});
const phase = (t: number, edge: 'begin' | 'end', name: string, iteration = 0, module = ''): RunEvent => ({
  type: 'phase',
  t,
  edge,
  name,
  iteration,
  micro_batch: -1,
  module,
});

describe('RunSeries.ingest', () => {
  it('builds lines, phase bands, the peak and per-sample modules across batches', () => {
    const s = new RunSeries();
    s.ingest(
      [sample(0, 100), sample(1, 300)],
      [phase(0, 'begin', 'iteration'), phase(0, 'begin', 'forward'), phase(0.5, 'begin', 'module', 0, 'layers.0')],
    );
    s.ingest(
      [sample(2, 250), sample(3, 120)],
      [
        phase(1.5, 'end', 'module', 0, 'layers.0'),
        phase(1.5, 'end', 'forward'),
        phase(1.5, 'begin', 'backward'),
        phase(3, 'end', 'backward'),
      ],
    );
    expect(s.length).toBe(4);
    expect(s.peak).toMatchObject({ x: 1, y: 300 });
    expect(s.phases.map((p) => [p.name, p.start, p.end])).toEqual([
      ['forward', 0, 1.5],
      ['backward', 1.5, 3],
    ]);
    expect(s.modules).toEqual([undefined, 'layers.0', undefined, undefined]);
    // Stacked view: every contract category plus cached-free (reserved - allocated).
    expect(s.categories).toHaveLength(CATEGORIES.length + 1);
    expect(CATEGORIES.map(categoryLabel)).toEqual(expect.arrayContaining(['attention', 'MLP', 'norms', 'logits / loss', 'KV cache']));
    expect(categoryLabel('kv_cache')).toBe('KV cache');
    expect(s.categories[CATEGORIES.length]).toEqual([100, 100, 100, 100]);
    expect(s.indexAt(2.5)).toBe(2);
  });

  it('keeps the allocator trace for the segment map and marks an OOM', () => {
    const s = new RunSeries();
    s.ingest(
      [sample(0, 10)],
      [
        { type: 'alloc', t: 0, action: 'segment_alloc', addr: 4096, size: 2 << 20, category: '', module: '' },
        { type: 'alloc', t: 0, action: 'alloc', addr: 4096, size: 512, category: 'inputs', module: '' },
        { type: 'alloc', t: 0.5, action: 'oom', addr: 0, size: 1 << 30, category: '', module: 'layers.3' },
      ],
    );
    expect(s.allocEvents).toHaveLength(3);
    // Without module markers, a sample is attributed to the latest allocation's module.
    s.ingest(
      [sample(1, 20)],
      [{ type: 'alloc', t: 0.9, action: 'alloc', addr: 8192, size: 512, category: 'activations', module: 'layers.1' }],
    );
    expect(s.modules[1]).toBe('layers.1');
    expect(s.oom?.x).toBe(0.5);
  });

  it('names the op and module at each sample for the hover, dropping the op once a new module starts', () => {
    const s = new RunSeries();
    const alloc = (t: number, op: string | undefined, module: string): RunEvent => ({
      type: 'alloc',
      t,
      action: 'alloc',
      addr: 4096 * (t + 1),
      size: 512,
      blockSize: 512,
      category: 'activations',
      module,
      op,
    });
    s.ingest(
      [sample(1, 10), sample(2, 20), sample(3, 30), sample(4, 40)],
      [
        phase(0, 'begin', 'module', 0, 'layers.0'),
        alloc(0.5, 'addmm', 'layers.0'),
        phase(1.5, 'end', 'module', 0, 'layers.0'),
        phase(1.5, 'begin', 'module', 0, 'layers.1'),
        phase(2.5, 'end', 'module', 0, 'layers.1'),
        alloc(3.5, undefined, 'head'),
      ],
    );
    expect(s.ops).toEqual(['addmm', undefined, 'addmm', undefined]);
    expect([0, 1, 2, 3].map((i) => s.doingAt(i))).toEqual(['addmm · layers.0', 'layers.1', 'addmm · layers.0', 'head']);
  });
});
