// Zooming and hovering the memory chart of a generation run, in both views, raises no
// page error (the stacked view's zoom once threw "reading 'y'"), and zoom rescales y.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';

async function hoverAcross(page: Page) {
  const box = (await page.locator('[data-testid="memory-chart"] canvas').boundingBox())!;
  for (let f = 0.1; f < 1; f += 0.1) await page.mouse.move(box.x + box.width * f, box.y + box.height / 2);
}

describe.skipIf(!haveChromium())('UI: memory chart zoom', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('zooms, pans and hovers a generation run by category and as lines without page errors', async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('field-modelKind').selectOption('gpt');
    await page.getByTestId('field-preset').selectOption('gpt2');
    await fill(page, 'field-batch', '4');
    await page.getByTestId('field-mode').selectOption('generate');
    await fill(page, 'field-prompt', '64');
    await fill(page, 'field-new_tokens', '128');
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_chart_zoom')).toBe('done');
    const chart = page.getByTestId('memory-chart');
    // The bands have a key; the y axis fits the run (its peak is at least half the height).
    const phases = await page
      .locator('[data-testid="phase-key"] [data-phase]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-phase')));
    expect(phases).toEqual(expect.arrayContaining(['prefill', 'decode']));
    const peakY = Number((await chart.getAttribute('data-peak'))!.split(',')[1]);
    const fitted = Number(await chart.getAttribute('data-y-max'));
    expect(fitted).toBeGreaterThanOrEqual(peakY);
    expect(fitted).toBeLessThanOrEqual(peakY * 2);
    for (const view of ['view-stacked', 'view-lines']) {
      await page.getByTestId(view).check();
      await page.waitForTimeout(100);
      await page.getByTestId('run-view').screenshot({ path: shot(`ui_chart_generate_${view.slice(5)}`) });
      const box = (await chart.locator('canvas').boundingBox())!;
      const yMaxBefore = Number(await chart.getAttribute('data-y-max'));
      await hoverAcross(page);
      for (let i = 0; i < 4; i++) await page.getByRole('button', { name: 'Zoom in' }).click();
      await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2);
      await page.mouse.wheel(0, -400);
      await hoverAcross(page);
      await page.getByRole('button', { name: 'Pan left' }).click();
      await page.getByRole('button', { name: 'Pan right' }).click();
      await hoverAcross(page);
      await page.waitForTimeout(100);
      await page.getByTestId('run-view').screenshot({ path: shot(`ui_chart_zoomed_${view.slice(5)}`) });
      // The y axis fits what is in view, never more than the whole run's.
      expect(Number(await chart.getAttribute('data-y-max'))).toBeLessThanOrEqual(yMaxBefore);
      await page.getByTestId('reset-zoom').click();
      await page.waitForTimeout(100);
      expect(Number(await chart.getAttribute('data-y-max'))).toBe(yMaxBefore);
    }
    expect(errors).toEqual([]);
    await page.close();
  });
});
