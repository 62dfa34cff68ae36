// Long work in the Compare tab shows how far it got and can be stopped: a sweep and a fit
// show n/N with the rows so far, Cancel stops them (no run starts after it), and the tab
// works again afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, startUi, type UiEnv } from './ui_helpers';

/** Runs of the form's MLP long enough (hundreds of ms each) to be caught under way. */
const ITERATIONS = '400';

async function settled(page: Page): Promise<void> {
  await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
}

async function storedRuns(env: UiEnv): Promise<number> {
  const reply = await env.server.host.handle({ id: 1, method: 'runs.list' }, 'ipc');
  return (reply as { result: unknown[] }).result.length;
}

describe.skipIf(!haveChromium())('UI: progress and cancel for sweeps and fit', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('a sweep shows n/N and its rows so far, Cancel stops it, and a new sweep then runs to the end', async () => {
    const { page, errors } = await openLab(env, 'experiment');
    await fill(page, 'field-iterations', ITERATIONS);
    await page.getByTestId('tab-compare').click();
    await page.getByTestId('sweep-preset').selectOption('batch');
    const values = Array.from({ length: 24 }, (_, i) => 8 * (i + 1));
    await fill(page, 'sweep-values', values.join(', '));
    await page.getByTestId('sweep-run').click();

    const progress = page.getByTestId('sweep-progress');
    await page.waitForFunction(
      () => Number(document.querySelector('[data-testid="sweep-progress"]')?.getAttribute('data-done')) >= 2,
      null,
      {
        timeout: 60_000,
      },
    );
    expect(await progress.getAttribute('data-total')).toBe(String(values.length));
    expect(await page.getByTestId('sweep-progress-count').textContent()).toMatch(new RegExp(`sweep runs [0-9]+/${values.length}`));
    expect(await page.locator('[data-testid="sweep-partial"] li').count()).toBeGreaterThanOrEqual(2);

    await page.getByTestId('sweep-progress-cancel').click();
    await settled(page);
    expect(await page.getByTestId('sweep-error').count()).toBe(0);
    const rows = await page.locator('[data-testid="sweep-table"] tbody tr').count();
    expect(rows).toBeGreaterThanOrEqual(2);
    expect(rows).toBeLessThan(values.length);
    // Nothing runs on after the cancel.
    const stored = await storedRuns(env);
    await page.waitForTimeout(1000);
    expect(await storedRuns(env)).toBe(stored);

    // The tab is usable again: a short sweep runs to its end.
    await fill(page, 'sweep-values', '8, 16');
    await page.getByTestId('sweep-run').click();
    await settled(page);
    expect(await page.getByTestId('sweep-error').count()).toBe(0);
    const statuses = await page
      .locator('[data-testid="sweep-table"] tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td')[1].textContent));
    expect(statuses).toEqual(['done', 'done']);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a fit shows its probes as they end, and Cancel stops it with the probes so far', async () => {
    const { page, errors } = await openLab(env, 'experiment');
    await fill(page, 'field-iterations', ITERATIONS);
    await page.getByTestId('tab-compare').click();
    await page.getByTestId('fit-run').click();
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="fit-progress"]')?.getAttribute('data-done')) >= 1, null, {
      timeout: 60_000,
    });
    expect(await page.getByTestId('fit-progress-count').textContent()).toMatch(/fit probes [0-9]+\/[0-9]+/);
    expect(await page.getByTestId('fit-partial').textContent()).toMatch(/[0-9]+[✓✗]/);
    await page.getByTestId('fit-progress-cancel').click();
    await settled(page);
    expect(await page.getByTestId('sweep-error').textContent()).toMatch(/Fit cancelled after [0-9]+ probes: [0-9]+[✓✗]/);
    expect(await page.getByTestId('fit-result').count()).toBe(0);
    const stored = await storedRuns(env);
    await page.waitForTimeout(1000);
    expect(await storedRuns(env)).toBe(stored);
    // And the buttons work again.
    expect(await page.getByTestId('fit-run').isEnabled()).toBe(true);
    expect(await page.getByTestId('sweep-run').isEnabled()).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });
});
