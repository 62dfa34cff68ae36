// The tensor playground on the simulated device: commands change allocated and reserved
// the way PyTorch's caching allocator does, and the segment map follows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: tensor playground', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('allocates, frees and empties the cache as PyTorch does', async () => {
    const { page, errors } = await openLab(env, 'playground');
    await page.getByTestId('pg-open').click();
    const pgError = page.getByTestId('pg-error');
    await page.waitForFunction(
      () => document.querySelector('[data-testid="pg-allocated"]') || document.querySelector('[data-testid="pg-error"]'),
      null,
      { timeout: 30_000 },
    );
    if (await pgError.count()) {
      await page.screenshot({ path: shot('ui_playground_failed'), fullPage: true });
      throw new Error(`playground failed in the UI: ${await pgError.textContent()}`);
    }
    const exact = async (id: string) => Number((await page.getByTestId(id).getAttribute('title'))!.replace(/[^0-9]/g, ''));
    const run = async (cmd: string) => {
      const before = await page.locator('[data-testid="pg-log"] .entry').count();
      await page.getByTestId('pg-input').fill(cmd);
      await page.getByTestId('pg-input').press('Enter');
      await page.locator('[data-testid="pg-log"] .entry').nth(before).waitFor();
    };
    await run('x = randn(1000, 1000)');
    // 4,000,000 bytes rounded to 512: one block in a 20 MiB large-pool segment.
    expect(await exact('pg-allocated')).toBe(4_000_256);
    expect(await exact('pg-reserved')).toBe(20 * 2 ** 20);
    await run('y = x.view(-1)');
    expect(await exact('pg-allocated')).toBe(4_000_256);
    await run('z = x.clone()');
    expect(await exact('pg-allocated')).toBe(8_000_512);
    expect(Number(await page.getByTestId('segment-map').getAttribute('data-segments'))).toBe(1);
    await run('del x');
    await run('del y');
    await run('del z');
    expect(await exact('pg-allocated')).toBe(0);
    expect(await exact('pg-reserved')).toBe(20 * 2 ** 20);
    await run('empty_cache()');
    expect(await exact('pg-reserved')).toBe(0);
    await run('memory_summary()');
    expect(await page.getByTestId('pg-log').textContent()).toContain('PyTorch CUDA memory summary');
    await page.screenshot({ path: shot('ui_playground'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
