// "fits" is not monotone in the length under a cap (fragmentation): on the simulated device
// a small GPT (vocab 8192, d256, 4 layers, batch 2, bf16, AdamW) under a 448 MiB cap runs at
// 1728 tokens but runs out at 1620. Doubling from 864 reaches 1728 and bisection finds
// nothing longer; alone it would report 1728 as if every shorter length fit. Fit checks
// below its answer and says which length runs out, in the runner's result, the CLI's text
// and its JSON. Real engine runs, no synthetic job.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAddon } from '../../main/addon/load';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { belowAnswer, runFit } from '../../main/runner/fit';
import { notEveryBelow } from '../../main/contract/fit_words';
import type { FitResult } from '../../main/contract/runs';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/vramlab.js');
const SPEC = {
  model: { kind: 'gpt', vocab: 8192, seq: 864, dim: 256, depth: 4, heads: 4 },
  batch: 2,
  precision: 'bf16',
  optimizer: 'adamw',
  loss: 'cross_entropy',
  capacity: '448MiB',
};
let dir = '';
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-fit-monotone-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('fit under a cap where a shorter length runs out', () => {
  it('reports the answer and the shorter length that runs out, each from a real run', async () => {
    const store = await RunStore.open(path.join(dir, 'runner'));
    const manager = new RunManager(loadAddon(), store, { progress: () => {}, done: () => {}, error: () => {} });
    const fit = await runFit(manager, SPEC, { param: 'seq', parallel: 1 });
    expect(fit.value).toBe(1728);
    expect(fit.probes.slice(0, 3).map((p) => [p.value, p.ok])).toEqual([
      [864, true],
      [1728, true],
      [3456, false],
    ]);
    // Steps of 1728/16 = 108 down to the last fit doubling reached below the answer (864).
    expect(fit.checkedBelow).toEqual(belowAnswer(1728, [864, 1728]));
    expect(fit.checkedBelow).toEqual([1620, 1512, 1404, 1296, 1188, 1080, 972]);
    expect(fit.runsOutBelow).toEqual([1620]);
    for (const v of fit.checkedBelow) expect(fit.probes.find((p) => p.value === v)?.ok).toBe(v !== 1620);
    expect(notEveryBelow(fit)).toBe('fits at 1728, but not at every length below: 1620 runs out');
  });

  it('says so in the CLI text and JSON, with its default probes at once', () => {
    const file = path.join(dir, 'spec.json');
    writeFileSync(file, JSON.stringify(SPEC));
    const env = { ...process.env, VRAMLAB_HOME: path.join(dir, 'cli') };
    const json = spawnSync(process.execPath, [bin, 'fit', file, '--param', 'seq', '--json', '-q'], { env, encoding: 'utf8' });
    expect(json.status).toBe(0);
    const out = JSON.parse(json.stdout) as FitResult;
    // Probes at once change the order of the search, not what the probes found.
    expect(out.value).toBeGreaterThanOrEqual(1728);
    expect(out.runsOutBelow.length).toBeGreaterThan(0);
    for (const v of out.runsOutBelow) {
      expect(v).toBeLessThan(out.value);
      expect(out.probes.find((p) => p.value === v)?.ok).toBe(false);
    }
    const text = spawnSync(process.execPath, [bin, 'fit', file, '--param', 'seq', '-q'], { env, encoding: 'utf8' });
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(`largest seq that fits under the 448.00 MiB cap on sim:h100-80gb: ${out.value}\n`);
    expect(text.stdout).toContain(`  ${notEveryBelow(out)}\n`);
    expect(text.stdout).toMatch(/fits at \d+, but not at every length below: \d+.* out/);
  });
});

describe('the checks below a fit answer', () => {
  it('step by 1/16 of the answer down to the last fit the doubling reached, else half the answer', () => {
    expect(belowAnswer(300, [16, 32, 64, 128, 256])).toEqual([281, 262]);
    expect(belowAnswer(160, [])).toEqual([150, 140, 130, 120, 110, 100, 90]);
    expect(belowAnswer(5, [4])).toEqual([]);
    expect(belowAnswer(1, [])).toEqual([]);
    expect(belowAnswer(0, [])).toEqual([]);
  });

  it('words a monotone check and a non-monotone one', () => {
    expect(notEveryBelow({ param: 'batch', value: 300, checkedBelow: [281, 262], runsOutBelow: [] })).toBe(
      'checked below it down to 262 (2 more probes): each fits',
    );
    expect(notEveryBelow({ param: 'seq', value: 4224, checkedBelow: [3960, 3840], runsOutBelow: [3840, 3960] })).toBe(
      'fits at 4224, but not at every length below: 3840 and 3960 run out',
    );
    expect(notEveryBelow({ param: 'seq', value: 0, checkedBelow: [], runsOutBelow: [] })).toBeNull();
  });
});
