// Walk a guided experiment to its quick check; progress survives a reload. Also the
// lost-connection banner: the page never goes blank when the host goes away.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: guided experiments', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('lists at least twelve lessons and walks the checkpointing one to its quick check', async () => {
    const { page, errors } = await openLab(env, 'lessons');
    const items = page.locator('nav[aria-label="Guided experiments"] li');
    expect(await items.count()).toBeGreaterThanOrEqual(12);
    await page.getByTestId('lesson-checkpointing').click();
    await page.locator('#lesson-title', { hasText: 'checkpointing' }).waitFor();
    expect(await page.getByTestId('lesson-step').count()).toBeGreaterThanOrEqual(3);
    // A wrong answer first, then the right one; the explanation shows each time.
    const options = page.getByTestId('check-option');
    await options.nth(0).check();
    expect(await page.getByTestId('check-verdict').textContent()).toMatch(/Not quite/);
    await options.nth(1).check();
    expect(await page.getByTestId('check-verdict').textContent()).toMatch(/Right/);
    expect(await page.getByTestId('check-explanation').textContent()).toMatch(/gradients/);
    await page.screenshot({ path: shot('ui_lesson'), fullPage: true });

    // Progress is remembered across a reload.
    await page.reload();
    await page.getByTestId('lessons').waitFor();
    expect(await page.getByTestId('lesson-checkpointing').textContent()).toContain('✓');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('runs a lesson step as a real experiment on the host', async () => {
    const { page, errors } = await openLab(env, 'lessons');
    await page.getByTestId('lesson-training-memory').click();
    await page.getByTestId('lesson-action').first().click();
    await waitForRun(page, 'ui_lesson_run');
    expect(await page.getByTestId('run-status').textContent()).toBe('done');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('is readable in the dark theme', async () => {
    const { page, errors } = await openLab(env, 'experiment', { dark: true });
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe('rgb(17, 19, 24)');
    await page.screenshot({ path: shot('ui_dark_experiment'), fullPage: true });
    // The tabs are keyboard reachable: arrow keys move between screens.
    await page.getByTestId('tab-experiment').focus();
    for (let i = 0; i < 6 && (await page.getByTestId('tab-lessons').getAttribute('aria-selected')) !== 'true'; i++)
      await page.keyboard.press('ArrowRight');
    expect(await page.getByTestId('tab-lessons').getAttribute('aria-selected')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('tab-lessons');
    await page.getByTestId('lessons').waitFor();
    await page.screenshot({ path: shot('ui_dark_lessons'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
