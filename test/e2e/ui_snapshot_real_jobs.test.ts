// The Snapshots screen in Chromium on snapshots from real jobs: a job that ran out of
// memory under a cap, and a history switched on late. Both said plainly, with numbers.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, type UiEnv } from './ui_helpers';

const FIX = path.resolve(import.meta.dirname, '../fixtures/torch');

describe.skipIf(!haveChromium())('UI: snapshots from real jobs', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('a recorded OOM and a late start', async () => {
    const { page, errors } = await openLab(env, 'snapshots');
    await page.getByTestId('snap-drop').waitFor();
    await page.getByTestId('snap-file').setInputFiles(path.join(FIX, 'residual_oom_capped.pickle'));
    await page.getByTestId('snap-badge-oom').filter({ hasText: 'recorded OOM at event 1892' }).waitFor({ timeout: 30_000 });
    // The why is on the first tab, open by default.
    const oom = page.getByTestId('snap-recorded-oom');
    await oom.waitFor();
    expect(await oom.textContent()).toMatch(/a memory cap \(set_per_process_memory_fraction\), not the card, refused it/);
    expect(await page.getByTestId('snap-oom-cap').textContent()).toMatch(/cap of 2\.00 GiB/);
    await page.screenshot({ path: shot('ui_snapshot_recorded_oom'), fullPage: true });

    // The what-if opens at the job's own cap; the default settings run out there again.
    await page.getByTestId('snapview-whatif').click();
    expect(await page.getByTestId('snap-capacity').inputValue()).toBe('2GiB');
    await page.getByTestId('snap-conf-input').fill('');
    await page.getByTestId('snap-run-whatif').click();
    await page
      .getByTestId('snap-own-outcome')
      .filter({ hasText: /OOM at event 1892/ })
      .waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('snap-own-outcome').textContent()).toMatch(/the recorded OOM again/);

    await page.getByTestId('snap-file').setInputFiles(path.join(FIX, 'gpt_late_start.pickle'));
    await page.getByTestId('snap-badge-late').filter({ hasText: 'trace started late' }).waitFor({ timeout: 30_000 });
    // A new snapshot opens on its first tab: where the memory was at peak is there.
    await page.getByTestId('snap-where-peak').waitFor();
    await page.getByTestId('snapview-stats').click();
    const late = page.getByTestId('snap-late-start');
    await late.waitFor();
    expect(await late.textContent()).toMatch(/740\.00 MiB were already reserved in 51 segments/);
    await page.screenshot({ path: shot('ui_snapshot_late_start'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
