// The Snapshots screen in Chromium against a real `vramlab serve`: open a real PyTorch
// snapshot (sent in chunks over the WebSocket), read its timeline, scrub the allocator
// state, and ask whether expandable_segments would have fitted the run on a smaller card.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, type UiEnv } from './ui_helpers';

const FIX = path.resolve(import.meta.dirname, '../fixtures');
const RESNET = path.join(FIX, 'torch', 'resnet18_sgd.pickle');
const stats = JSON.parse(readFileSync(path.join(FIX, 'torch', 'resnet18_sgd.stats.json'), 'utf8'));
const exact = (s: string | null) => Number(s!.replace(/[^0-9]/g, ''));

describe.skipIf(!haveChromium())('UI: PyTorch memory snapshots', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('opens a snapshot, shows its timeline and state, and compares a what-if', async () => {
    const { page, errors } = await openLab(env, 'snapshots');
    await page.getByTestId('snap-drop').waitFor();
    await page.screenshot({ path: shot('ui_snapshot_open'), fullPage: true });

    // A file of 569 KB: two chunks over the WebSocket.
    await page.getByTestId('snap-file').setInputFiles(RESNET);
    await page.getByTestId('snap-name').filter({ hasText: 'resnet18_sgd.pickle' }).waitFor({ timeout: 30_000 });

    // The timeline: bands for the largest allocations.
    const tl = page.getByTestId('snap-timeline');
    await tl.waitFor();
    expect(Number(await tl.getAttribute('data-bands'))).toBeGreaterThan(10);
    expect(Number(await tl.getAttribute('data-points'))).toBeLessThanOrEqual(1200);
    // Hover the tallest part of the stack: the tooltip names an allocation with its stack.
    const box = (await tl.locator('canvas').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.52, box.y + box.height * 0.45);
    const tip = page.getByTestId('snap-timeline-tip');
    await tip.waitFor();
    expect(await tip.textContent()).toMatch(/MiB|KiB/);
    expect(await tip.textContent()).toMatch(/bytes/);
    await page.screenshot({ path: shot('ui_snapshot_timeline'), fullPage: true });

    // Keyboard: focus the chart, walk to the end, Enter opens the allocator state there.
    await tl.focus();
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.getByTestId('snap-state').waitFor();
    // The last point is the last bucket's peak: one of the final events.
    await page
      .getByTestId('snap-state-event')
      .filter({ hasText: /event 262\d/ })
      .waitFor();
    expect(await page.getByTestId('snap-seg').count()).toBe(37);
    // The scrubber, by keyboard: Home goes before the first event: nothing reserved.
    await page.getByTestId('snap-scrubber').focus();
    await page.keyboard.press('Home');
    await page.getByTestId('snap-state-event').filter({ hasText: 'before the first event' }).waitFor();
    expect(await page.getByTestId('snap-seg').count()).toBe(0);
    // Peak reserved: PyTorch's own number.
    await page.getByRole('button', { name: 'peak reserved' }).click();
    await page.waitForFunction((want) => {
      const el = document.querySelector('[data-testid="snap-state-reserved"]');
      return el && Number(el.parentElement!.getAttribute('title')!.replace(/[^0-9]/g, '')) === want;
    }, stats.peak_reserved);
    await page.getByTestId('snap-seg').first().click();
    await page.getByTestId('snap-blocks').waitFor();
    await page.screenshot({ path: shot('ui_snapshot_state'), fullPage: true });

    await page.getByTestId('snapview-largest').click();
    await page.getByTestId('snap-largest').locator('tbody tr').first().waitFor();
    await page.screenshot({ path: shot('ui_snapshot_largest'), fullPage: true });

    await page.getByTestId('snapview-stats').click();
    expect(exact(await page.getByTestId('snap-peak-reserved').getAttribute('title'))).toBe(stats.peak_reserved);
    expect(await page.getByTestId('snap-trace-length').textContent()).toMatch(/^2627 events/);
    await page.screenshot({ path: shot('ui_snapshot_stats'), fullPage: true });

    // What-if: expandable_segments on a 660 MiB card. The recorded run reserved 974 MiB.
    await page.getByTestId('snapview-whatif').click();
    expect(await page.getByTestId('snap-preset-expandable_segments').getAttribute('aria-pressed')).toBe('true');
    await page.getByTestId('snap-capacity').fill('660MiB');
    await page.getByTestId('snap-run-whatif').click();
    await page.getByTestId('snap-compare').waitFor({ timeout: 30_000 });
    const own = await page.getByTestId('snap-own-outcome').textContent();
    const whatIf = await page.getByTestId('snap-whatif-outcome').textContent();
    expect(own).toMatch(/^OOM at event \d+/);
    expect(whatIf).toBe('fits');
    expect(await page.getByTestId('snap-verdict').textContent()).toMatch(/^Yes: expandable_segments:True fits this run in 660\.00 MiB/);
    expect(exact(await page.getByTestId('snap-whatif-peak-reserved').getAttribute('title'))).toBeLessThanOrEqual(660 * 2 ** 20);
    await page.getByTestId('snap-oom').first().locator('summary').click();
    await page.screenshot({ path: shot('ui_snapshot_whatif'), fullPage: true });

    // A setting the allocator refuses: the reason, in place; the screen keeps working.
    await page.getByTestId('snap-conf-input').fill('max_split_size_mb:4');
    await page.getByTestId('snap-run-whatif').click();
    await page
      .getByTestId('snap-whatif-error')
      .filter({ hasText: /max_split_size_mb.*too small, must be >= 20/ })
      .waitFor();
    await page.screenshot({ path: shot('ui_snapshot_whatif_error'), fullPage: true });

    // Grid mode.
    await page.getByTestId('snap-grid-mode').check();
    await page.getByTestId('snap-grid-caps').fill('640MiB, 700MiB, device');
    await page.getByTestId('snap-run-grid').click();
    const grid = page.getByTestId('snap-grid');
    await grid.waitFor({ timeout: 30_000 });
    expect(await grid.locator('tbody tr').count()).toBe(4);
    expect(await grid.locator('tbody tr').first().locator('td').first().textContent()).toMatch(/^OOM at event/);
    // The whole-device column (the last column is the smallest capacity that fits).
    expect(await grid.locator('tbody tr').first().locator('td').nth(2).textContent()).toMatch(/974\.00 MiB/);
    await page.screenshot({ path: shot('ui_snapshot_grid'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows the reader's reason for a file that is not a snapshot, in place", async () => {
    const { page, errors } = await openLab(env, 'snapshots', { dark: true });
    // The first test left resnet18 open in the host: the screen comes back to it.
    await page.getByTestId('snap-name').filter({ hasText: 'resnet18_sgd.pickle' }).waitFor();
    await page.getByTestId('snap-file').setInputFiles(path.join(FIX, 'snapshot', 'evil_global_reduce.pickle'));
    const err = page.getByTestId('snap-open-error');
    await err.waitFor();
    expect(await err.textContent()).toMatch(/evil_global_reduce\.pickle is not a PyTorch memory snapshot vramlab can read/);
    await page.getByTestId('snapview-overview').waitFor();
    await page.screenshot({ path: shot('ui_snapshot_bad_file_dark'), fullPage: true });

    // Drag and drop: a second snapshot opens beside the first.
    const b64 = readFileSync(path.join(FIX, 'torch', 'mlp_adam.pickle')).toString('base64');
    const dataTransfer = await page.evaluateHandle((data) => {
      const bin = atob(data);
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(bin, (c) => c.charCodeAt(0))], 'mlp_adam.pickle'));
      return dt;
    }, b64);
    await page.dispatchEvent('[data-testid="snap-drop"]', 'dragover', { dataTransfer });
    await page.dispatchEvent('[data-testid="snap-drop"]', 'drop', { dataTransfer });
    await page.getByTestId('snap-name').filter({ hasText: 'mlp_adam.pickle' }).waitFor();
    expect(await page.getByTestId('snap-open-error').count()).toBe(0);
    expect(
      await page
        .locator('select option')
        .filter({ hasText: /\.pickle$/ })
        .allTextContents(),
    ).toEqual(['mlp_adam.pickle', 'resnet18_sgd.pickle']);
    await page.getByTestId('snap-timeline').waitFor();
    await page.screenshot({ path: shot('ui_snapshot_dropped_dark'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('cancels a large upload between its chunks, says so, and opens the next file', async () => {
    const { page, errors } = await openLab(env, 'snapshots');
    await page.getByTestId('snap-drop').waitFor();
    // 32 MiB: about 90 chunks, each a round trip over the WebSocket.
    const big = { name: 'big.pickle', mimeType: 'application/octet-stream', buffer: Buffer.alloc(32 << 20) };
    await page.getByTestId('snap-file').setInputFiles(big);
    await page
      .getByTestId('snap-progress')
      .filter({ hasText: /of \d+ chunks/ })
      .waitFor({ timeout: 30_000 });
    await page.getByTestId('snap-cancel').click();
    const note = page.getByTestId('snap-cancelled');
    await note.waitFor({ timeout: 30_000 });
    expect(await note.textContent()).toMatch(/opening big\.pickle was cancelled after \d+ of \d+ chunks/);
    expect(await page.getByTestId('snap-open-error').count()).toBe(0);
    // Nothing is stuck: the next file opens.
    await page.getByTestId('snap-file').setInputFiles(RESNET);
    await page.getByTestId('snap-name').filter({ hasText: 'resnet18_sgd.pickle' }).waitFor({ timeout: 30_000 });
    expect(errors).toEqual([]);
    await page.close();
  });
});
