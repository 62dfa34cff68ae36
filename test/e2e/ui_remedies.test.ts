// The verdict and the checked remedies in the panel: an OOM spec says what it needs and by
// how much it is short, "What would make it fit" lists the changes the simulator found to
// fit, and applying one puts that spec in the form, whose prediction then fits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: does it fit, and what would make it fit', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('shows the requirement and shortfall of an OOM, lists checked remedies, and applies one', async () => {
    const { page, errors } = await openLab(env);
    // A small GPT at batch 16 on a 16 GB card: runs out of memory as it stands.
    await page.getByTestId('field-device').selectOption('sim:t4-16gb');
    await page.getByTestId('field-modelKind').selectOption('gpt');
    await fill(page, 'field-vocab', '50257');
    await fill(page, 'field-seq', '1024');
    await fill(page, 'field-dim', '512');
    await fill(page, 'field-depth', '4');
    await fill(page, 'field-heads', '8');
    await fill(page, 'field-batch', '16');
    const verdict = page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="verdict"]');
    await verdict.filter({ hasText: 'does not fit' }).waitFor({ timeout: 30_000 });
    expect(await verdict.textContent()).toMatch(/does not fit: needs [0-9.]+ GiB on the card: short by [0-9.]+ [MG]iB/);
    // The model is counted, not "0 parameters".
    expect(await page.getByTestId('predicted-params').textContent()).not.toMatch(/^\s*0 parameters/);
    await page.getByTestId('prediction').screenshot({ path: shot('ui_verdict') });

    await page.getByTestId('find-remedies').click();
    await page.getByTestId('remedy-list').waitFor({ timeout: 60_000 });
    const remedies = page.getByTestId('remedy');
    expect(await remedies.count()).toBeGreaterThan(0);
    await page.getByTestId('remedies').screenshot({ path: shot('ui_remedies') });

    // Apply the first (cheapest) remedy: the form takes its spec and the prediction fits.
    await remedies.first().getByTestId('apply-remedy').click();
    await verdict.filter({ hasText: /^\s*fits/ }).waitFor({ timeout: 30_000 });
    expect(await verdict.textContent()).toMatch(/fits: [0-9.]+ GiB on the card of 14\.58 GiB, [0-9.]+ [MG]iB headroom/);
    // The list belonged to the old spec: it is gone after the change.
    expect(await page.getByTestId('remedy-list').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });
});
