// The prediction beside the form: in plain words and in view without scrolling at 1440x900
// for a transformer, raw readings behind a disclosure with counts shown as counts, the card's
// context marked measured or estimated; and the spec the form sends (as the WebSocket carries
// it) holds only what the chosen mode reads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: the prediction panel and the spec it sends', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('answers in plain words, inside the first screen at 1440x900, with the raw readings behind a disclosure', async () => {
    const viewport = { width: 1440, height: 900 };
    const { page, errors } = await openLab(env, 'experiment', { viewport });
    await page.getByTestId('field-modelKind').selectOption('gpt');
    const settled = '[data-testid="prediction"][data-pending="false"]';
    await page.locator(`${settled} [data-testid="verdict"]`).waitFor({ timeout: 60_000 });
    expect(await page.evaluate(() => window.scrollY)).toBe(0);
    const box = (await page.getByTestId('prediction').boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(viewport.height);
    expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);

    const panel = page.getByTestId('prediction');
    for (const words of ['Peak allocated', 'Peak reserved', 'On the card', 'Headroom', 'Parameters'])
      expect(await panel.textContent()).toContain(words);
    expect(await page.getByTestId('predicted-context').textContent()).toMatch(/reserved \+ CUDA context & libraries 767\.00 MiB/);
    expect(await page.getByTestId('predicted-headroom').textContent()).toMatch(/[0-9.]+ GiB\s*left on the card/);
    // No engine keys in the answer itself; they wait behind the disclosure.
    expect(await page.getByTestId('predicted-readings').isVisible()).toBe(false);
    await page.getByTestId('predicted-raw').locator('summary').click();
    const row = (key: string) => page.locator(`[data-testid="predicted-readings"] li[data-key="${key}"]`);
    expect(await row('it0_peak_fwd_bwd').textContent()).toContain('peak in forward + backward (iteration 1)');
    await page.getByTestId('answer').screenshot({ path: shot('ui_prediction') });
    await page.screenshot({ path: shot('ui_experiment_transformer') });

    // The card's context says how it is known.
    expect(await page.getByTestId('card-context').textContent()).toMatch(/CUDA context & libraries: 767\.00 MiB \(measured\)/);
    await page.getByTestId('field-device').selectOption('sim:v100-16gb');
    await expect
      .poll(() => page.getByTestId('card-context').textContent())
      .toMatch(/767\.00 MiB \(estimated\); PyTorch\s+may\s+reserve\s+up\s+to\s+15\.03 GiB/);

    // Drawn lengths add cudaMalloc / cudaFree counts to the readings: counts, digits and no unit.
    for (const [field, value] of Object.entries({ vocab: '8192', seq: '256', dim: '256', depth: '2', heads: '4' }))
      await fill(page, `field-${field}`, value);
    await page.getByTestId('field-vary').check();
    await fill(page, 'field-draw_max', '256');
    await fill(page, 'field-draw_steps', '4');
    await row('num_device_alloc').waitFor({ timeout: 30_000 });
    expect(await row('num_device_alloc').textContent()).toContain('cudaMalloc calls');
    expect((await row('num_device_alloc').locator('.num').textContent())!.trim()).toMatch(/^[0-9,]+$/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('sends only what the mode reads: no LoRA or optimizer in generation, no prompt in training', async () => {
    const sent: { method: string; params: { spec: Record<string, unknown> } }[] = [];
    const { page, errors } = await openLab(env, 'experiment', {
      beforeOpen: (p) =>
        p.on('websocket', (ws) =>
          ws.on('framesent', (f) => {
            const m = JSON.parse(String(f.payload));
            if (m.method === 'run.start') sent.push(m);
          }),
        ),
    });
    await page.getByTestId('field-modelKind').selectOption('gpt');
    for (const [field, value] of Object.entries({ vocab: '8192', seq: '256', dim: '256', depth: '2', heads: '4', batch: '2' }))
      await fill(page, `field-${field}`, value);
    await page.getByTestId('field-finetune').selectOption('lora');
    await page.getByTestId('field-mode').selectOption('generate');
    // The mode offers no fine-tuning for gpt and no training fields.
    expect(await page.getByTestId('finetune').count()).toBe(0);
    expect(await page.getByTestId('field-optimizer').count()).toBe(0);
    await page.getByTestId('run').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="run-view"]') !== null);
    expect(await waitForRun(page, 'ui_clean_spec_generate')).toBe('done');
    const gen = sent.at(-1)!.params.spec;
    for (const k of ['finetune', 'optimizer', 'accum', 'iterations', 'checkpoint', 'loss', 'empty_cache_every', 'shapes'])
      expect(gen).not.toHaveProperty(k);
    expect(gen).toMatchObject({ mode: 'generate', prompt: 128, new_tokens: 128, cache: 'dynamic' });

    // Back to training: the LoRA choice was kept and is sent again, the generation fields are not.
    await page.getByTestId('field-mode').selectOption('train');
    expect(await page.getByTestId('field-finetune').inputValue()).toBe('lora');
    await page.getByTestId('run').click();
    await expect.poll(() => sent.length, { timeout: 30_000 }).toBe(2);
    await waitForRun(page, 'ui_clean_spec_train');
    const train = sent[1].params.spec;
    expect(train).toMatchObject({ mode: 'train', finetune: { method: 'lora' }, optimizer: 'adam' });
    for (const k of ['prompt', 'new_tokens', 'cache']) expect(train).not.toHaveProperty(k);
    expect(errors).toEqual([]);
    await page.close();
  });
});
