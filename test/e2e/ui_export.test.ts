// Export a stored run as CSV from the Runs screen (a blob: anchor download) and read it back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import Papa from 'papaparse';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: runs and export', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('runs an experiment, finds it in Runs, renames it and exports its timeline as CSV', async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('run').click();
    await waitForRun(page, 'ui_runs');

    await page.getByTestId('tab-runs').click();
    const row = page.locator('[data-testid="runs-table"] tbody tr').first();
    await row.waitFor();
    await row.getByTestId('rename').click();
    await page.getByTestId('rename-input').fill('export me');
    await page.getByTestId('rename-input').press('Enter');
    await page.locator('[data-testid="runs-table"]', { hasText: 'export me' }).waitFor();
    await page.getByTestId('runs-search').fill('export');
    expect(await page.locator('[data-testid="runs-table"] tbody tr').count()).toBe(1);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
    expect(download.suggestedFilename()).toMatch(/\.csv$/);
    const file = await download.path();
    const parsed = Papa.parse<Record<string, string>>(readFileSync(file!, 'utf8'), { header: true, skipEmptyLines: true });
    expect(parsed.errors).toEqual([]);
    expect(parsed.meta.fields).toEqual(expect.arrayContaining(['time_ms', 'allocated_bytes', 'reserved_bytes']));
    expect(parsed.data.length).toBeGreaterThan(10);
    const peak = Math.max(...parsed.data.map((r) => Number(r.allocated_bytes)));
    expect(peak).toBeGreaterThan(25_000_000); // the seed MLP's weights alone are 25 MB
    await page.screenshot({ path: shot('ui_runs'), fullPage: true });

    // A second run, then both as one summary CSV (a row per run) and as JSON.
    await page.getByTestId('tab-experiment').click();
    await page.getByTestId('field-batch').fill('1024');
    await page.getByTestId('run').click();
    await waitForRun(page, 'ui_runs_second');
    await page.getByTestId('tab-runs').click();
    await page.getByTestId('runs-search').fill('');
    await page.locator('[data-testid="runs-table"] tbody tr').nth(1).waitFor();
    const [summary] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-summary-csv').click()]);
    const sum = Papa.parse<Record<string, string>>(readFileSync((await summary.path())!, 'utf8'), { header: true, skipEmptyLines: true });
    expect(sum.data).toHaveLength(2);
    expect(sum.data.map((r) => r.name)).toContain('export me');
    expect(sum.data.map((r) => r.batch).sort()).toEqual(['1024', '256']);
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
    expect(JSON.parse(readFileSync((await json.path())!, 'utf8')).runs).toHaveLength(2);

    // Opening a stored run shows its timeline again: scrolled into view, under the form, its heading focused.
    await page.locator('[data-testid="open-run"]', { hasText: 'export me' }).click();
    await page.getByTestId('run-summary').waitFor();
    const where = await page.getByTestId('run-view').evaluate((el) => ({
      top: el.getBoundingClientRect().top,
      height: innerHeight,
      focused: document.activeElement?.textContent,
    }));
    expect(where.top).toBeGreaterThanOrEqual(0);
    expect(where.top).toBeLessThan(where.height / 2);
    expect(where.focused).toBe('export me');
    expect(Number(await page.getByTestId('memory-chart').getAttribute('data-points'))).toBe(parsed.data.length);
    expect(errors).toEqual([]);
    await page.close();
  });
});
