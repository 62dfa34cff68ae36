// The app's fit answer says what it knows when "fits" is not monotone: a small GPT under a
// 448 MiB cap fits at 1728 tokens but runs out at 1620 (fragmentation under the cap; the same
// case as test/unit/fit_not_monotone.test.ts). Compare's fit over seq answers the longest
// length probed, what was probed above it up to the allocated bound, and the length below
// that runs out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, startUi, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: fit under a cap that is not monotone', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('answers the longest length and names a shorter one that runs out', async () => {
    const { page, errors } = await openLab(env, 'experiment');
    await page.getByTestId('field-modelKind').selectOption('gpt');
    for (const [k, v] of Object.entries({ vocab: '8192', seq: '864', dim: '256', depth: '4', heads: '4', batch: '2' }))
      await fill(page, `field-${k}`, v);
    await page.getByTestId('field-precision').selectOption('bf16');
    await page.getByTestId('field-optimizer').selectOption('adamw');
    await page.getByTestId('field-history').uncheck();
    await fill(page, 'field-capacity', '448MiB');
    await page.getByTestId('tab-compare').click();
    await page.getByTestId('fit-param').selectOption('seq');
    await page.getByTestId('fit-run').click();
    await page.getByTestId('fit-result').waitFor({ timeout: 110_000 });
    const err = page.getByTestId('sweep-error');
    if (await err.count()) throw new Error(`fit failed in the UI: ${await err.textContent()}`);
    const value = Number(await page.getByTestId('fit-result').getAttribute('data-value'));
    expect(value).toBeGreaterThanOrEqual(1728);
    const below = page.getByTestId('fit-below');
    const runsOut = (await below.getAttribute('data-runs-out'))!.split(',').map(Number);
    expect(runsOut.length).toBeGreaterThan(0);
    expect(runsOut.every((v) => v > 0 && v < value)).toBe(true);
    expect((await below.textContent())!.trim()).toMatch(new RegExp(`^${runsOut[0]}\\b.* below ${value} runs? out$`));
    expect((await page.getByTestId('fit-longest').textContent())!.trim()).toBe(`longest that fits: ${value} (probed)`);
    const above = page.getByTestId('fit-above');
    const bound = Number(await above.getAttribute('data-bound'));
    expect(bound).toBeGreaterThan(value);
    // The default probe budget does not reach every length up to the bound here: it says how many it left.
    const unexplored = Number(await above.getAttribute('data-unexplored'));
    expect((await above.textContent())!.trim()).toMatch(
      new RegExp(
        `^above ${value} up to ${bound} \\(allocated bound\\): \\d+ lengths probed.*, each runs out, ${unexplored} not probed \\(`,
      ),
    );
    expect(errors).toEqual([]);
    await page.close();
  });
});
