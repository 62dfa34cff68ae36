// Run a batch-size sweep from the UI and see the sweep chart (measured next to the simulated prediction),
// then find the largest batch that fits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: sweeps', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('sweeps the batch size and charts the peaks, then finds the largest batch that fits', async () => {
    // The sweep varies the experiment form; a 1 GiB cap keeps the fit search short.
    const { page, errors } = await openLab(env, 'experiment');
    await fill(page, 'field-capacity', '1GiB');
    await page.getByTestId('tab-compare').click();
    await page.getByTestId('sweep-preset').selectOption('batch');
    await fill(page, 'sweep-values', '64, 128, 256');
    await page.getByTestId('sweep-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    const err = page.getByTestId('sweep-error');
    if (await err.count()) {
      await page.screenshot({ path: shot('ui_sweep_failed'), fullPage: true });
      throw new Error(`sweep failed in the UI: ${await err.textContent()}`);
    }
    const rows = page.locator('[data-testid="sweep-table"] tbody tr');
    expect(await rows.count()).toBe(3);
    const statuses = await rows.evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td')[1].textContent));
    expect(statuses).toEqual(['done', 'done', 'done']);
    // Peaks grow with the batch.
    const peaks = await rows.evaluateAll((trs) =>
      trs.map((tr) =>
        Number(
          tr
            .querySelectorAll('td')[2]
            .getAttribute('title')!
            .replace(/[^0-9]/g, ''),
        ),
      ),
    );
    expect(peaks[0]).toBeLessThan(peaks[2]);
    // Predicted next to measured (both over the baseline): on a simulated card the prediction is the run.
    const predicted = await rows.evaluateAll((trs) =>
      trs.map((tr) =>
        Number(
          tr
            .querySelectorAll('td')[4]
            .getAttribute('title')!
            .replace(/[^0-9]/g, ''),
        ),
      ),
    );
    expect(predicted).toEqual(peaks);
    await page.screenshot({ path: shot('ui_sweep'), fullPage: true });

    // The largest batch that fits the device: a positive batch and the probes that found it.
    await page.getByTestId('fit-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    if (await err.count()) throw new Error(`fit failed in the UI: ${await err.textContent()}`);
    expect(await page.getByTestId('fit-result').textContent()).toMatch(/Largest batch that fits in .*: [1-9][0-9]*/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('charts peak vs depth for each checkpoint mode, and fp32 vs bf16', async () => {
    const { page, errors } = await openLab(env, 'experiment');
    await page.getByTestId('field-modelKind').selectOption('residual');
    await fill(page, 'field-batch', '1024');
    await page.getByTestId('tab-compare').click();
    await page.getByTestId('sweep-preset').selectOption('depth');
    await fill(page, 'sweep-values', '4, 8, 16');
    await page.getByTestId('sweep-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    const err = page.getByTestId('sweep-error');
    if (await err.count()) throw new Error(`depth sweep failed in the UI: ${await err.textContent()}`);
    // Measured and predicted for each of none / block / sqrt.
    expect(await page.getByTestId('sweep-chart').getAttribute('data-series')).toBe('6');
    const rows = page.locator('[data-testid="sweep-table"] tbody tr');
    expect(await rows.count()).toBe(9);
    const peak = async (depth: string, mode: string) =>
      Number(
        (await rows
          .filter({ has: page.locator(`td:nth-child(1):text-is("${depth}")`) })
          .filter({ has: page.locator(`td:nth-child(2):text-is("${mode}")`) })
          .locator('td')
          .nth(3)
          .getAttribute('title'))!.replace(/[^0-9]/g, ''),
      );
    // At batch 1024 the activations dominate: checkpointing every block lowers the peak of the deepest model.
    expect(await peak('16', 'block')).toBeLessThan(await peak('16', 'none'));
    await page.screenshot({ path: shot('ui_sweep_depth'), fullPage: true });

    await page.getByTestId('sweep-preset').selectOption('precision');
    await page.getByTestId('sweep-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    if (await err.count()) throw new Error(`precision sweep failed in the UI: ${await err.textContent()}`);
    expect(await page.locator('[data-testid="sweep-table"] tbody tr').count()).toBe(2);
    await page.screenshot({ path: shot('ui_sweep_precision'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
