// The transformer families in the browser: a GPT-2 preset run with its categories, a sweep
// over the sequence length, a LoRA run, and generation with the KV cache on the chart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';

async function gpt2(page: Page, batch = '2') {
  await page.getByTestId('field-modelKind').selectOption('gpt');
  await page.getByTestId('field-preset').selectOption('gpt2');
  await fill(page, 'field-batch', batch);
  await page.getByTestId('field-precision').selectOption('bf16');
  await page.getByTestId('field-history').uncheck();
}
const categoriesAtPeak = (page: Page) =>
  page.locator('[data-testid="peak-categories"] tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-category')));

describe.skipIf(!haveChromium())('UI: transformers', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('runs the GPT-2 small preset: predicted peak, parameters, attention / MLP / logits at the peak', async () => {
    const { page, errors } = await openLab(env);
    await gpt2(page);
    expect(await page.getByTestId('field-vocab').inputValue()).toBe('50257');
    await page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-peak"]').waitFor({ timeout: 30_000 });
    const predicted = Number((await page.getByTestId('predicted-peak').getAttribute('title'))!.replace(/[^0-9]/g, ''));
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_gpt')).toBe('done');
    expect(await page.getByTestId('run-parameters').textContent()).toContain('124,439,808');
    const cats = await categoriesAtPeak(page);
    for (const c of ['attention', 'MLP', 'logits / loss']) expect(cats).toContain(c);
    // The prediction was the run: the same peak over the baseline.
    const peakTitle = await page.getByTestId('peak-over-baseline').getAttribute('title');
    expect(Number(peakTitle!.split(';')[0].replace(/[^0-9]/g, ''))).toBe(predicted);
    await page.getByTestId('view-stacked').check();
    await page.waitForTimeout(200);
    await page.screenshot({ path: shot('ui_gpt_stacked'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('sweeps the sequence length: peaks grow with seq', async () => {
    const { page, errors } = await openLab(env);
    await gpt2(page, '1');
    await page.getByTestId('tab-compare').click();
    await page.getByTestId('sweep-preset').selectOption('seq');
    await fill(page, 'sweep-values', '128, 512');
    await page.getByTestId('sweep-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    const err = page.getByTestId('sweep-error');
    if (await err.count()) throw new Error(`seq sweep failed in the UI: ${await err.textContent()}`);
    const rows = page.locator('[data-testid="sweep-table"] tbody tr');
    expect(await rows.count()).toBe(2);
    const cell = (col: number) =>
      rows.evaluateAll(
        (trs, c) =>
          trs.map((tr) =>
            Number(
              tr
                .querySelectorAll('td')
                .item(c)
                .getAttribute('title')!
                .replace(/[^0-9]/g, ''),
            ),
          ),
        col,
      );
    const measured = await cell(2);
    expect(measured[1]).toBeGreaterThan(measured[0]);
    expect(await cell(4)).toEqual(measured); // simulated before running = measured on a simulated card
    await page.screenshot({ path: shot('ui_sweep_seq'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('runs LoRA: few trainable parameters, and a lower predicted peak than full fine-tuning', async () => {
    const { page, errors } = await openLab(env);
    await gpt2(page);
    const settled = () =>
      page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-peak"]').waitFor({ timeout: 30_000 });
    const predicted = async () => Number((await page.getByTestId('predicted-peak').getAttribute('title'))!.replace(/[^0-9]/g, ''));
    await settled();
    const full = await predicted();
    await page.getByTestId('field-finetune').selectOption('lora');
    await page.getByTestId('field-target-fc').check();
    await page.waitForFunction(
      (f) => {
        const el = document.querySelector('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-peak"]');
        return !!el && Number(el.getAttribute('title')!.replace(/[^0-9]/g, '')) < f;
      },
      full,
      { timeout: 30_000 },
    );
    expect(await predicted()).toBeLessThan(full);
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_lora')).toBe('done');
    expect(await page.getByTestId('run-parameters').textContent()).toMatch(/trainable/);
    await page.screenshot({ path: shot('ui_lora'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('generates with a KV cache: prefill and decode, the cache visible at the peak', async () => {
    const { page, errors } = await openLab(env);
    await gpt2(page, '8');
    await page.getByTestId('field-mode').selectOption('generate');
    await fill(page, 'field-prompt', '64');
    await fill(page, 'field-new_tokens', '448'); // long enough that the peak is in decode, with the cache grown
    await page.getByTestId('field-cache').selectOption('dynamic');
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_generate')).toBe('done');
    expect(await categoriesAtPeak(page)).toContain('KV cache');
    const phases = await page.locator('[data-testid="phase-peaks"] tbody tr td:first-child').allTextContents();
    expect(phases).toEqual(expect.arrayContaining(['prefill', 'decode']));
    await page.getByTestId('view-stacked').check();
    await page.waitForTimeout(200);
    await page.screenshot({ path: shot('ui_generate_kv_cache'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
