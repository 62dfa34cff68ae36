// Configure and run an experiment on the simulated device: the chart fills as progress
// streams, the summary appears, and the segment map can be scrubbed along the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: experiment run', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('validates, predicts, runs and fills the chart, then shows the summary', async () => {
    const { page, errors } = await openLab(env);
    // The form validates as typed.
    await fill(page, 'field-batch', 'abc');
    await page.getByTestId('error-batch').waitFor();
    expect(await page.getByTestId('run').isDisabled()).toBe(true);
    await fill(page, 'field-batch', '512');
    expect(await page.getByTestId('error-batch').count()).toBe(0);
    // The prediction (the spec simulated on the host) follows the edit.
    await page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-peak"]').waitFor();
    expect(await page.getByTestId('predicted-peak').textContent()).toMatch(/MiB/);

    await page.getByTestId('run').click();
    // Fails loudly (with the host's message) if the host cannot run experiments.
    await waitForRun(page, 'ui_experiment');
    expect(await page.getByTestId('run-status').textContent()).toBe('done');
    expect(Number(await page.getByTestId('memory-chart').getAttribute('data-points'))).toBeGreaterThan(10);
    await page.getByTestId('run-summary').waitFor();
    expect(await page.getByTestId('peak-allocated').textContent()).toMatch(/MiB|GiB/);
    await page.screenshot({ path: shot('ui_experiment'), fullPage: true });
    // Hovering the chart names the moment (phase, then "op · module"); drawn on the canvas, so a screenshot shows it.
    const chartBox = (await page.getByTestId('memory-chart').locator('canvas').first().boundingBox())!;
    await page.mouse.move(chartBox.x + chartBox.width * 0.12, chartBox.y + chartBox.height * 0.6);
    await page.waitForTimeout(300);
    await page.getByTestId('memory-chart').screenshot({ path: shot('ui_experiment_hover') });

    // Zoom and pan from the keyboard-reachable buttons (the wheel and drag do the same).
    await page.getByRole('button', { name: 'Zoom in' }).click();
    await page.getByRole('button', { name: 'Pan left' }).click();
    await page.getByTestId('reset-zoom').click();
    expect(await page.getByTestId('reset-zoom').count()).toBe(0);

    await page.getByTestId('view-stacked').check();
    await page.waitForTimeout(200);
    await page.getByTestId('memory-chart').screenshot({ path: shot('ui_experiment_stacked') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('scrubs the segment map along a run', async () => {
    const { page, errors } = await openLab(env);
    await fill(page, 'field-batch', '512');
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_segment_map')).toBe('done');
    // Scrub the segment map to the start and to the middle of the run.
    // The segment map replays the run's allocator trace (the spec records history by default).
    if (await page.getByTestId('no-trace').count())
      throw new Error(
        `segment map: ${await page.getByTestId('no-trace').textContent()} (runs with history: true must stream "alloc" events)`,
      );
    const map = page.getByTestId('segment-map');
    await map.waitFor({ timeout: 10_000 }).catch(async (e) => {
      await page.screenshot({ path: shot('ui_segment_map_failed'), fullPage: true });
      throw new Error(
        `segment map not shown: ${(await page.locator('section[aria-label="Segment map"]').innerHTML()).slice(0, 400)} (${e})`,
      );
    });
    const atEnd = await map.getAttribute('data-segments');
    const scrub = page.getByTestId('scrub');
    const max = Number(await scrub.getAttribute('max'));
    // Keyboard first (Home = the start of the run), then a drag-like jump to the middle.
    await scrub.focus();
    await page.keyboard.press('Home');
    expect(await page.getByTestId('scrub-time').textContent()).toBe('0.00 ms');
    expect(Number(await map.getAttribute('data-segments'))).toBeLessThanOrEqual(Number(atEnd));
    await scrub.evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input', { bubbles: true }));
    }, max / 2);
    expect(Number((await page.getByTestId('scrub-time').textContent())!.replace(' ms', ''))).toBeCloseTo(max / 2, 1);
    expect(Number(await map.getAttribute('data-segments'))).toBeGreaterThan(0);
    await page.locator('section[aria-label="Segment map"]').screenshot({ path: shot('ui_segment_map') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows an OOM with PyTorch's message and the diagnosis when the capacity is small", async () => {
    const { page, errors } = await openLab(env);
    await fill(page, 'field-batch', '8192');
    await fill(page, 'field-capacity', '160MiB');
    await page.getByTestId('predicted-oom').waitFor();
    await page.getByTestId('run').click();
    await waitForRun(page, 'ui_oom');
    expect(await page.getByTestId('run-status').textContent()).toBe('oom');
    const msg = await page.getByTestId('oom-message').textContent();
    expect(msg).toMatch(/CUDA out of memory\. Tried to allocate [0-9.]+ [KMG]iB/);
    expect(await page.getByTestId('oom-diagnosis').textContent()).toMatch(/largest share is/);
    await page.screenshot({ path: shot('ui_oom'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("draws the CUDA context & libraries as their own band under the card's total", async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('field-device').selectOption('sim:t4-16gb');
    await page.getByTestId('field-modelKind').selectOption('residual');
    await fill(page, 'field-dim', '2048');
    await fill(page, 'field-depth', '2');
    await fill(page, 'field-batch', '262144');
    // The prediction shows the context as its own row and counts it in the verdict.
    await page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="predicted-context"]').waitFor();
    expect(await page.getByTestId('predicted-context').textContent()).toMatch(/CUDA context & libraries\s*[0-9.]+ MiB/);
    expect(await page.getByTestId('predicted-oom').textContent()).toMatch(
      /reserved \+ CUDA context & libraries would pass the card's 14\.58 GiB/,
    );
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_context_band')).toBe('oom');
    expect(await page.getByTestId('oom-whole-card').textContent()).toMatch(
      /reserved [0-9.]+ GiB \+ CUDA context [0-9.]+ MiB = [0-9.]+ GiB of 14\.58 GiB/,
    );
    const key = page.getByTestId('context-band');
    expect(await key.textContent()).toMatch(/CUDA context & libraries: [0-9.]+ MiB of the card's 14\.58 GiB/);
    await page.waitForFunction(() => document.querySelector('[data-testid="context-band"]')?.getAttribute('data-drawn') === 'true');
    // The band is on the canvas, in its own colour: sample the row through its middle.
    const chart = page.getByTestId('memory-chart');
    const [top, bottom] = (await chart.getAttribute('data-context-band'))!.split(',').map(Number);
    expect(bottom).toBeGreaterThan(top);
    const greenish = await chart.locator('canvas').evaluate(
      (c, mid) => {
        const canvas = c as HTMLCanvasElement;
        const scale = canvas.width / canvas.clientWidth;
        const row = canvas.getContext('2d')!.getImageData(0, Math.round(mid * scale), canvas.width, 1).data;
        let n = 0;
        for (let i = 0; i < row.length; i += 4) if (row[i + 3] > 0 && row[i + 1] > row[i] + 4 && row[i + 1] > row[i + 2] + 4) n++;
        return n / (row.length / 4);
      },
      (top + bottom) / 2,
    );
    expect(greenish).toBeGreaterThan(0.3);
    await page.getByTestId('run-view').screenshot({ path: shot('ui_context_band') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('draws the run readably in the dark theme', async () => {
    const { page, errors } = await openLab(env, 'experiment', { dark: true });
    await page.getByTestId('field-modelKind').selectOption('residual');
    await fill(page, 'field-depth', '8');
    await fill(page, 'field-batch', '1024');
    await page.getByTestId('field-checkpoint').selectOption('sqrt');
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_dark_run')).toBe('done');
    await page.getByTestId('run-view').screenshot({ path: shot('ui_dark_run') });
    expect(errors).toEqual([]);
    await page.close();
  });
});
