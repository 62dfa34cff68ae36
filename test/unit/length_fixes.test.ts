// Varying sequence lengths on the real engine and allocator (simulated H100): reserved
// memory creeps as new lengths arrive, and each usual fix changes that the way PyTorch's
// caching allocator would. Needs the addon (VRAMLAB_ADDON or build/Release).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadAddon } from '../../main/addon/load';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { runFixes } from '../../main/runner/fixes';
import type { FixesResult, FixRow } from '../../main/contract/runs';

const spec = {
  model: { kind: 'gpt', vocab: 8192, seq: 1024, dim: 256, depth: 2, heads: 4 },
  precision: 'bf16',
  optimizer: 'adamw',
  shapes: { batch: 8, steps: 40, seed: 11, seq: { min: 32, max: 1024 } },
  device: 'sim:h100-80gb',
};

let home = '';
let manager: RunManager;
let result: FixesResult;
const row = (fix: string): FixRow => result.rows.find((r) => r.fix === fix)!;

beforeAll(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-fixes-'));
  manager = new RunManager(loadAddon(), await RunStore.open(home));
  result = await runFixes(manager, spec);
}, 120_000);
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('varying lengths and their fixes (real engine)', () => {
  it('runs every fix to the end, one group', async () => {
    expect(result.rows.map((r) => [r.fix, r.status])).toEqual([
      ['none', 'done'],
      ['pad_buckets', 'done'],
      ['longest_first', 'done'],
      ['pack', 'done'],
      ['expandable_segments', 'done'],
      ['empty_cache', 'done'],
    ]);
    const metas = await Promise.all(result.rows.map((r) => manager.store.meta(r.runId)));
    expect(new Set(metas.map((m) => m.group?.id))).toEqual(new Set([result.fixesId]));
    expect(metas[0].spec.shapes).toMatchObject({ steps: 40, seed: 11 }); // stored as the draw
  });

  it('as drawn, reserved memory creeps: new lengths keep allocating segments after the first step', async () => {
    const rec = await manager.store.get(row('none').runId);
    const firstStepEnd = rec.meta.summary!.readings.it0_after_zero_grad;
    expect(firstStepEnd).toBeDefined();
    expect(row('none').device_allocs!).toBeGreaterThan(row('pack').device_allocs!);
    // reserved at the end of the run is above what the first step needed
    const reserved = rec.timeline.map((s) => s.reserved);
    expect(Math.max(...reserved)).toBeGreaterThan(reserved[Math.floor(reserved.length / 40)]);
  });

  it('padding to buckets adds tokens and leaves fewer distinct sizes; packing makes one shape', () => {
    expect(row('pad_buckets').padding).toBeGreaterThan(0);
    expect(row('none').padding).toBe(0);
    expect(row('pack').steps).toBeLessThan(row('none').steps);
    expect(row('pack').padding).toBeLessThan(8 * 1024);
  });

  it('longest first sizes the cache at step 0: no higher peak, fewer segments than as drawn', () => {
    expect(row('longest_first').peak_reserved).toBeLessThanOrEqual(row('none').peak_reserved);
    expect(row('longest_first').device_allocs!).toBeLessThanOrEqual(row('none').device_allocs!);
  });

  it('empty_cache() gives segments back, so more are allocated again; expandable segments map pages instead', () => {
    expect(row('empty_cache').device_allocs!).toBeGreaterThan(row('none').device_allocs!);
    expect(row('empty_cache').reserved_end!).toBeLessThanOrEqual(row('none').reserved_end!);
    expect(row('expandable_segments').peak_reserved).toBeLessThanOrEqual(row('none').peak_reserved);
  });

  it('under a cap between the two peaks, the creep turns into segments given back and allocated again (as PyTorch frees its cache and retries)', async () => {
    const cap = Math.floor((row('longest_first').peak_reserved + row('none').peak_reserved) / 2);
    const capped = await runFixes(manager, { ...spec, capacity: cap });
    const none = capped.rows.find((r) => r.fix === 'none')!;
    expect(none.status).toBe('done');
    expect(none.peak_reserved).toBeLessThanOrEqual(cap);
    expect(none.device_allocs!).toBeGreaterThan(row('none').device_allocs!);
  });

  it('under a cap the longest step cannot fit, longest-first fails at step 0 and the drawn order only later', async () => {
    const capped = await runFixes(manager, { ...spec, capacity: Math.floor(row('longest_first').peak_reserved * 0.8) });
    const c = (fix: string) => capped.rows.find((r) => r.fix === fix)!;
    expect(c('longest_first').status).toBe('oom');
    expect(c('longest_first').oom_iteration).toBe(0);
    expect(c('none').status).toBe('oom');
    expect(c('none').oom_iteration!).toBeGreaterThan(0);
  });
});
