// "fits" is not monotone in the value under a cap (fragmentation), so fit does not stop at
// what doubling and bisection answer. Two small GPTs on the simulated device (vocab 8192,
// d256, 4 layers, bf16, AdamW; real engine runs, no synthetic job):
// - batch under a 1200 MiB cap: batch 12 runs out, but 13 and 14 fit. Bisection from batch 2
//   (2, 4, 8, 16 out, 12 out, 10, 11) answers 11; fit answers 14, and shows that nothing above
//   14 can fit: 15 runs out and 16 allocates more than the cap at its peak.
// - seq under a 448 MiB cap: 1620 runs out below the answer 1728, and with a small probe
//   budget the lengths above it up to the allocated bound that were not probed are named.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadAddon } from '../../main/addon/load';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { belowAnswer, runFit } from '../../main/runner/fit';
import { simulate } from '../../main/runner/simulate';
import { fitAnswer } from '../../main/contract/fit_words';
import { allocatorLimit } from '../../main/contract/card';
import { parseSpec } from '../../main/contract/spec';
import type { FitResult } from '../../main/contract/runs';
import { useTempHome } from '../helpers/temp_home';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/vramlab.js');
const GPT = { kind: 'gpt', vocab: 8192, seq: 864, dim: 256, depth: 4, heads: 4 } as const;
const BATCH_SPEC = { model: GPT, batch: 2, precision: 'bf16', optimizer: 'adamw', loss: 'cross_entropy', capacity: '1200MiB' };
const SEQ_SPEC = { ...BATCH_SPEC, capacity: '448MiB' };
const home = useTempHome('vramlab-fit-monotone-');
let manager: RunManager;
beforeAll(async () => {
  manager = new RunManager(loadAddon(), await RunStore.open(path.join(home.dir, 'runner')));
});

/** What the allocator may reserve for the spec on its card (the cap here). */
const limitOf = (spec: object) => {
  const s = parseSpec(spec);
  return allocatorLimit(manager.card(s.device), s.capacity);
};
/** A real run's allocated peak at `value`, on the spec's card (80 GB) without its cap. */
const allocatedAt = async (spec: object, key: 'batch' | 'seq', value: number) => {
  const input = key === 'batch' ? { ...spec, batch: value } : { ...spec, model: { ...GPT, seq: value } };
  const o = await simulate(loadAddon(), parseSpec({ ...input, capacity: null }), 'sim:h100-80gb');
  expect(o.status).toBe('done');
  return o.peak_allocated;
};
const okAt = (fit: FitResult, v: number) => fit.probes.find((p) => p.value === v)?.ok;

describe('fit when a value above the first failure fits', () => {
  it('answers the largest batch that fits, above what bisection found, and bounds it', async () => {
    const fit = await runFit(manager, BATCH_SPEC, { param: 'batch', parallel: 1 });
    // Doubling then bisection, as before: 16 and 12 run out, 11 fits.
    expect(fit.probes.slice(0, 7).map((p) => [p.value, p.ok])).toEqual([
      [2, true],
      [4, true],
      [8, true],
      [16, false],
      [12, false],
      [10, true],
      [11, true],
    ]);
    expect(fit.bisected).toBe(11);
    // Above it: 14 fits though 12 runs out.
    expect(fit.value).toBe(14);
    expect(okAt(fit, 14)).toBe(true);
    expect(okAt(fit, 12)).toBe(false);
    expect(fit.runsOutBelow).toContain(12);
    // Nothing above 14 can fit: from 15 on the allocated peak alone is over the cap (a real
    // run on the card without the cap says so, not only fit).
    expect([fit.bound, fit.boundExact, fit.unexplored]).toEqual([14, true, []]);
    const limit = limitOf(BATCH_SPEC);
    expect(limit).toBe(1200 * 2 ** 20);
    expect(await allocatedAt(BATCH_SPEC, 'batch', 14)).toBeLessThanOrEqual(limit);
    expect(await allocatedAt(BATCH_SPEC, 'batch', 15)).toBeGreaterThan(limit);
    expect(fit.boundOver?.value).toBe(15);
    expect(fit.boundOver!.allocated).toBeGreaterThan(fit.boundOver!.limit);
    // The probe that fit under the cap allocated exactly what the uncapped run does: the bound
    // counts the same allocations.
    expect(fit.probes.find((p) => p.value === 14)!.peak_allocated).toBe(await allocatedAt(BATCH_SPEC, 'batch', 14));
    expect(fitAnswer(fit)).toBe(
      'largest that fits: 14 (probed); nothing above 14 fits (allocated bound: the next allocates more than the limit); 12 below 14 runs out',
    );
  });

  it('says so in the CLI text and JSON, with its default probes at once', () => {
    const file = path.join(home.dir, 'batch.json');
    writeFileSync(file, JSON.stringify(BATCH_SPEC));
    const json = spawnSync(process.execPath, [bin, 'fit', file, '--param', 'batch', '--json', '-q'], { encoding: 'utf8' });
    expect(json.status, json.stderr).toBe(0);
    const out = JSON.parse(json.stdout) as FitResult;
    // Probes at once change the order of the search, not its answer once every value up to the bound is probed.
    expect([out.value, out.bound, out.unexplored]).toEqual([14, 14, []]);
    for (const v of out.runsOutBelow) {
      expect(v).toBeLessThan(out.value);
      expect(okAt(out, v)).toBe(false);
    }
    const text = spawnSync(process.execPath, [bin, 'fit', file, '--param', 'batch'], { encoding: 'utf8' });
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(`largest batch that fits under the 1.17 GiB cap on sim:h100-80gb: 14\n`);
    expect(text.stdout).toContain(`  ${fitAnswer(out)}\n`);
    // Progress as it probes, the bound's unbounded runs too.
    expect(text.stderr).toMatch(/^fit {2}batch 14: fits/m);
    expect(text.stderr).toMatch(/^bound batch 15: allocated peak .* over the 1\.17 GiB limit$/m);
  });
});

describe('fit under a cap where a shorter length runs out', () => {
  it('names the shorter length that runs out, and what its probe budget left unprobed above', async () => {
    const fit = await runFit(manager, SEQ_SPEC, { param: 'seq', parallel: 1, probes: 12 });
    expect(fit.value).toBe(1728);
    expect(fit.probes.slice(0, 3).map((p) => [p.value, p.ok])).toEqual([
      [864, true],
      [1728, true],
      [3456, false],
    ]);
    // Steps of 1728/16 = 108 down to the last fit doubling reached below the answer (864).
    expect(fit.checkedBelow).toEqual(belowAnswer(1728, [864, 1728]));
    expect(fit.checkedBelow).toEqual([1620, 1512, 1404, 1296, 1188, 1080, 972]);
    for (const v of fit.checkedBelow) expect(okAt(fit, v)).toBe(v !== 1620);
    expect(fit.runsOutBelow).toContain(1620);
    // The bound: the last length whose allocated peak is within the cap, by real unbounded runs.
    const limit = limitOf(SEQ_SPEC);
    const bound = fit.bound!;
    expect(bound).toBeGreaterThan(1728);
    expect(await allocatedAt(SEQ_SPEC, 'seq', bound)).toBeLessThanOrEqual(limit);
    expect(await allocatedAt(SEQ_SPEC, 'seq', bound + 1)).toBeGreaterThan(limit);
    // 12 probes above the answer: each runs out; every other length there is listed unprobed.
    const above = fit.probes.filter((p) => p.value > 1728);
    expect(above.every((p) => !p.ok)).toBe(true);
    const unprobed = fit.unexplored!.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i));
    const probedUpToBound = new Set(above.filter((p) => p.value <= bound).map((p) => p.value));
    expect(unprobed.length + probedUpToBound.size).toBe(bound - 1728);
    for (const v of unprobed) expect(probedUpToBound.has(v)).toBe(false);
    expect(unprobed.length).toBeGreaterThan(0);
    // The first pass, from the bound down in steps of a power of two, got through.
    expect(fit.stride).toBeGreaterThan(1);
    const words = fitAnswer(fit)!;
    expect(words).toMatch(
      new RegExp(
        `^longest that fits: 1728 \\(probed\\); above 1728 up to ${bound} \\(allocated bound\\): ${probedUpToBound.size} lengths probed \\(every ${fit.stride}th\\), each runs out, ${unprobed.length} not probed \\(${fit.unexplored![0][0]}[-,]`,
      ),
    );
    expect(words).toMatch(/; (.*, )?1620( and .*)? below 1728 runs? out$/);
  });
});
