// A Hugging Face model in the browser: a real config.json opened in the experiment panel, its
// main fields shown, the prediction simulated by the host, LoRA on (the prediction drops), and
// fit finding the largest batch on the card.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, type UiEnv } from './ui_helpers';

const fixture = (name: string) => path.resolve(import.meta.dirname, `../fixtures/hf/${name}.config.json`);
const predicted = async (page: import('playwright-core').Page) => {
  await page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-peak"]').waitFor({ timeout: 60_000 });
  return Number((await page.getByTestId('predicted-peak').getAttribute('title'))!.replace(/[^0-9]/g, ''));
};

describe.skipIf(!haveChromium())('UI: Hugging Face models', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('opens a config.json: its fields, a prediction, less with LoRA, and the largest batch that fits', async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('field-modelKind').selectOption('hf');
    await page.getByTestId('field-config-file').setInputFiles(fixture('Qwen2.5-0.5B'));
    await page.getByTestId('detail-architecture').filter({ hasText: 'Qwen2ForCausalLM' }).waitFor();
    expect(await page.getByTestId('detail-layers').textContent()).toBe('24');
    expect(await page.getByTestId('detail-heads').textContent()).toBe('14 / 2');
    await fill(page, 'field-seq', '256');
    await fill(page, 'field-batch', '2');
    await page.getByTestId('field-precision').selectOption('bf16');
    await page.getByTestId('field-weights').selectOption('bf16');
    await page.getByTestId('field-history').uncheck();
    const full = await predicted(page);
    expect(full).toBeGreaterThan(494_032_768 * 2);
    await page.getByTestId('field-finetune').selectOption('lora');
    expect(await page.getByTestId('field-target-q_proj').isChecked()).toBe(true);
    await page.waitForFunction(
      (before) => {
        const el = document.querySelector('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-peak"]');
        return el && Number(el.getAttribute('title')!.replace(/[^0-9]/g, '')) !== before;
      },
      full,
      { timeout: 60_000 },
    );
    const lora = await predicted(page);
    // No gradients or Adam state for the frozen base.
    expect(lora).toBeLessThan(full);
    await page.screenshot({ path: shot('ui_hf_config'), fullPage: true });

    await page.getByTestId('tab-compare').click();
    await page.getByTestId('fit-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    const err = page.getByTestId('sweep-error');
    if (await err.count()) throw new Error(`fit failed in the UI: ${await err.textContent()}`);
    expect(await page.getByTestId('fit-result').textContent()).toMatch(/Largest batch that fits in .*: [1-9][0-9]*/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
