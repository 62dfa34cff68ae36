// The smallest capacity a trace fits in, per allocator setting, found by bisection with the
// native replay: the cap found fits, one 2 MiB step lower runs out of memory. On a job that
// ran out of memory under a 2 GiB cap the answer lies above that cap.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSnapshotFile } from '../../main/snapshot/import';
import { minCapacity } from '../../main/snapshot/min_capacity';
import { hasNativeReplay, replayer } from '../../main/snapshot/replay';

const FIX = path.resolve(import.meta.dirname, '../fixtures/torch');
const load = (name: string) => loadSnapshotFile(path.join(FIX, `${name}.pickle`));
const stats = (name: string) => JSON.parse(readFileSync(path.join(FIX, `${name}.stats.json`), 'utf8'));
const STEP = 2 * 2 ** 20;

describe.skipIf(!hasNativeReplay())('smallest capacity that fits', () => {
  const cases: [string, string][] = [
    ['residual_oom_capped', ''],
    ['residual_oom_capped', 'expandable_segments:True'],
    ['mlp_adam', ''],
    ['gpt_late_start', 'max_split_size_mb:128'],
  ];
  for (const [name, conf] of cases) {
    it(`${name} under "${conf || 'default'}": the cap found fits and one step lower does not`, () => {
      const s = load(name);
      const r = replayer(s, 0);
      const m = minCapacity(r, conf, s.deviceTraces[0].length);
      expect(m.capacity).not.toBeNull();
      const cap = m.capacity!;
      expect(cap % STEP).toBe(0);
      expect(cap).toBeLessThanOrEqual(Math.ceil(m.peakReserved! / STEP) * STEP);
      expect(r.run({ allocConf: conf, capacity: cap }).firstOom).toBeNull();
      expect(r.run({ allocConf: conf, capacity: cap - STEP }).firstOom).not.toBeNull();
      // A bisection: a handful of replays, not a scan.
      expect(m.replays).toBeLessThanOrEqual(2 + Math.ceil(Math.log2(m.peakReserved! / STEP)));
    });
  }

  it('the job that ran out of memory under its 2 GiB cap needs more than that cap', () => {
    const s = load('residual_oom_capped');
    const m = minCapacity(replayer(s, 0), '', s.deviceTraces[0].length);
    expect(m.capacity!).toBeGreaterThan(stats('residual_oom_capped').capacity_bytes);
  });

  it('a trace too long to search says so instead of searching', () => {
    const s = load('mlp_adam');
    const m = minCapacity(replayer(s, 0), '', 10_000_000);
    expect(m).toMatchObject({ capacity: null, replays: 0 });
    expect(m.note).toMatch(/not searched: 10000000 events/);
  });
});
