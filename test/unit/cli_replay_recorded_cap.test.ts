// `vramlab replay` of a snapshot dumped at an OOM: without --capacity it replays under the
// cap that reproduces the recorded OOM (found by replay) and says so, so the first answer is
// the job's own failure, not "recorded OOM avoided" on a card the job never had.
// `--capacity device` asks for the whole device; a snapshot without an OOM is unchanged.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hasNativeReplay } from '../../main/snapshot/replay';
import { runCli } from '../helpers/io';

const FIX = path.resolve(import.meta.dirname, '../fixtures/torch');
const file = (name: string) => path.join(FIX, `${name}.pickle`);
const stats = (name: string) => JSON.parse(readFileSync(path.join(FIX, `${name}.stats.json`), 'utf8'));

describe.skipIf(!hasNativeReplay())('vramlab replay of an OOM snapshot', () => {
  it('uses the recorded cap by default: the OOM happens again at its event, and the output says which cap', async () => {
    const r = await runCli(['replay', file('residual_oom_capped')]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/replayed under the recorded cap, 2\.00 GiB \(the cap that reproduces the recorded OOM\)/);
    expect(r.out).toMatch(/--capacity device replays on the whole device/);
    expect(r.out).toMatch(/outcome .*OOM at event 1892 +OOM at event 1892 \(the recorded OOM\)/);
    expect(r.out).not.toMatch(/recorded OOM avoided/);

    const j = JSON.parse((await runCli(['replay', file('residual_oom_capped'), '--json'])).out);
    expect(j.capacity_source).toBe('recorded');
    expect(j.capacity).toBe(stats('residual_oom_capped').capacity_bytes);
    // PyTorch's own counters of the failed job.
    expect(j.num_ooms).toBe(stats('residual_oom_capped').num_ooms);
    expect(j.peak_reserved).toBe(stats('residual_oom_capped').peak_reserved);
    expect(j.recorded_ooms).toEqual([{ event_index: 1892, size: 64 * 2 ** 20, reproduced: true }]);
  });

  it('--capacity device replays on the whole device, where the recorded OOM is avoided', async () => {
    const j = JSON.parse((await runCli(['replay', file('residual_oom_capped'), '--capacity', 'device', '--json'])).out);
    expect(j.capacity_source).toBe('device');
    expect(j.capacity).toBeNull();
    expect(j.num_ooms).toBe(0);
    expect(j.recorded_ooms).toEqual([{ event_index: 1892, size: 64 * 2 ** 20, reproduced: false }]);
    const t = await runCli(['replay', file('residual_oom_capped'), '--capacity', 'device']);
    expect(t.out).not.toMatch(/recorded cap/);
    expect(t.out).toMatch(/fits; recorded OOM avoided/);
  });

  it('a what-if setting is compared with the own settings, both under the recorded cap', async () => {
    const r = await runCli(['replay', file('residual_oom_capped'), '--alloc-conf', 'expandable_segments:True']);
    expect(r.out).toMatch(/replay \(default settings, cap 2\.00 GiB\)/);
    expect(r.out).toMatch(/what-if \(expandable_segments:True, cap 2\.00 GiB\)/);
  });

  it('a snapshot without an OOM replays on the whole device, as before', async () => {
    const j = JSON.parse((await runCli(['replay', file('mlp_adam'), '--json'])).out);
    expect(j.capacity).toBeNull();
    expect(j.capacity_source).toBe('device');
    expect((await runCli(['replay', file('mlp_adam')])).out).not.toMatch(/recorded cap/);
  });

  it('--grid ends with the smallest capacity each setting fits in', async () => {
    const r = await runCli([
      'replay',
      file('residual_oom_capped'),
      '--grid',
      '--alloc-conf',
      '',
      '--alloc-conf',
      'expandable_segments:True',
    ]);
    expect(r.code).toBe(0);
    const part = r.out.split('smallest capacity that fits')[1];
    expect(part).toBeDefined();
    // Above the job's 2 GiB cap, which the default settings could not hold.
    const mib = [...part.matchAll(/\((\d+) MiB\)/g)].map((m) => Number(m[1]));
    expect(mib).toHaveLength(2);
    for (const m of mib) expect(m).toBeGreaterThan(2048);
  });
});
