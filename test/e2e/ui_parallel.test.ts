// Data parallel in the browser: an FSDP2 run of a small GPT shows every rank (world 4 as
// one class, "ranks 0–3"; world 3's uneven shards as two), each rank's verdict with NCCL's
// buffers as their own band beside the CUDA context, the rank that peaks highest; then fit
// finds the smallest world that fits a capped card, counting NCCL on the card.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { haveChromium } from '../helpers/browser';
import { fill, openLab, shot, startUi, waitForRun, type UiEnv } from './ui_helpers';
import { SIMULATED_PARALLEL_KINDS } from '../../main/contract/catalogue/parallel';

/** A small GPT (the published FSDP2 reference's shape), sharded with bf16 parameters. */
async function smallFsdp(page: Page, world: string) {
  await page.getByTestId('field-modelKind').selectOption('gpt');
  for (const [k, v] of Object.entries({ vocab: '8192', seq: '256', dim: '512', depth: '6', heads: '8', batch: '8' }))
    await fill(page, `field-${k}`, v);
  await page.getByTestId('field-parallelKind').selectOption('fsdp2');
  await fill(page, 'field-parallel_world', world);
  await page.getByTestId('field-parallel_param_dtype').selectOption('bf16');
  await page.getByTestId('field-parallel_reduce_dtype').selectOption('fp32');
}

/** "2.06 GiB" from a text, as formatBytes writes it. */
const sizeIn = (text: string, after: RegExp) => after.exec(text)?.[1] ?? null;

describe.skipIf(!haveChromium())('UI: data parallel', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('shows every rank: one class at world 4, two at world 3 with a per-rank OOM verdict, NCCL beside the context', async () => {
    const { page, errors } = await openLab(env);
    // DDP is listed from the catalogue but disabled until the simulator runs it.
    const ddp = page.locator('[data-testid="field-parallelKind"] option[value="ddp"]');
    expect(await ddp.isDisabled()).toBe(!SIMULATED_PARALLEL_KINDS.includes('ddp'));
    await smallFsdp(page, '4');
    // Allocator history is recorded for one GPU only: choosing FSDP2 turned it off.
    expect(await page.getByTestId('field-history').isChecked()).toBe(false);
    // The prediction counts NCCL's buffers on the card too.
    await page.locator('[data-testid="predicted-context"]', { hasText: '+ NCCL' }).waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('predicted-context').textContent()).toMatch(/\+ NCCL [0-9.]+ MiB per rank/);
    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_parallel')).toBe('done');

    const view = page.getByTestId('rank-view');
    expect(await view.getAttribute('data-world')).toBe('4');
    expect(await view.getAttribute('data-groups')).toBe('1');
    expect(await page.getByTestId('rank-label').textContent()).toBe('ranks 0–3');
    expect(await page.getByTestId('rank-group').getAttribute('data-fits')).toBe('true');
    // The rank's verdict and its band say the same on-card total: reserved + context + NCCL.
    const verdict = (await page.getByTestId('rank-verdict').textContent())!;
    const band = (await page.getByTestId('rank-card-band').getAttribute('aria-label'))!;
    expect(verdict).toContain(`fits: ${sizeIn(band, /on the card: (.+)$/)} on the card`);
    expect(await page.getByTestId('run-verdict').textContent()).toBe(verdict);
    const nccl = page.locator('[data-testid="rank-card-band"] [data-band="nccl"]');
    expect(await nccl.textContent()).toMatch(/NCCL buffers [0-9.]+ MiB/);
    expect(await page.locator('[data-testid="rank-card-band"] [data-band="context"]').textContent()).toMatch(/CUDA context/);
    expect(await page.getByTestId('run-nccl').textContent()).toContain(sizeIn((await nccl.textContent())!, /buffers (.+)$/)!);
    expect(Number(await page.getByTestId('rank-sparkline').getAttribute('data-points'))).toBeGreaterThan(5);
    expect(await page.getByTestId('rank-highest').textContent()).toMatch(/Every rank alike: ranks 0–3, .*peaking first at/);
    await page.screenshot({ path: shot('ui_parallel_ranks'), fullPage: true });

    // World 3 under a cap: ranks 0-1 hold the longer shards, rank 2 the shorter; the run
    // runs out, and each distinct rank says what it needs and how much is missing.
    await page.getByTestId('tab-experiment').click();
    await fill(page, 'field-parallel_world', '3');
    await fill(page, 'field-capacity', '330MiB');
    const first = await page.getByTestId('run-view').getAttribute('data-run-id');
    await page.getByTestId('run').click();
    await page.waitForFunction((id) => document.querySelector('[data-testid="run-view"]')?.getAttribute('data-run-id') !== id, first);
    expect(await waitForRun(page, 'ui_parallel_oom')).toBe('oom');
    await page.locator('[data-testid="rank-view"][data-groups="2"]').waitFor();
    const groups = page.getByTestId('rank-group');
    expect(await groups.evaluateAll((els) => els.map((e) => e.getAttribute('data-ranks')))).toEqual(['0,1', '2']);
    expect(await groups.evaluateAll((els) => els.map((e) => e.getAttribute('data-fits')))).toEqual(['false', 'false']);
    for (const t of await page.getByTestId('rank-verdict').allTextContents())
      expect(t).toMatch(/does not fit: needs .* short by .* with the context and NCCL/);
    expect(await page.getByTestId('rank-highest').textContent()).toMatch(/Peaks highest \(runs out first\): ranks 0–1/);
    await page.screenshot({ path: shot('ui_parallel_oom'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows DDP readings after the bucket rebuild as low–high, with why, in the prediction and every rank', async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('field-modelKind').selectOption('gpt');
    for (const [k, v] of Object.entries({ vocab: '8192', seq: '128', dim: '256', depth: '2', heads: '4', batch: '4', iterations: '3' }))
      await fill(page, `field-${k}`, v);
    await page.getByTestId('field-parallelKind').selectOption('ddp');
    await fill(page, 'field-parallel_world', '2');
    // The prediction lists the later iterations' readings PyTorch leaves to timing as ranges.
    const why = page.getByTestId('predicted-ranges');
    await why.waitFor({ timeout: 30_000 });
    expect(await why.textContent()).toMatch(
      /readings are low–high: PyTorch may or may not still hold the first iteration's gradient bucket/,
    );
    await page.getByTestId('predicted-raw').locator('summary').click();
    const rangedRaw = page.locator('[data-testid="predicted-readings"] [data-range]');
    expect(await rangedRaw.count()).toBeGreaterThan(0);
    for (const t of await rangedRaw.allTextContents()) expect(t).toMatch(/^[0-9.]+ [KMG]iB–[0-9.]+ [KMG]iB$/);
    // The first iteration is deterministic in PyTorch: a single value.
    expect(await page.locator('[data-testid="predicted-readings"] [data-key="it0_after_backward"] [data-range]').count()).toBe(0);

    await page.getByTestId('run').click();
    expect(await waitForRun(page, 'ui_parallel_ddp')).toBe('done');
    expect(await page.getByTestId('rank-label').textContent()).toBe('ranks 0–1');
    expect(await page.getByTestId('rank-ranges').textContent()).toMatch(/Readings shown low–high: PyTorch may or may not still hold/);
    await page.getByTestId('rank-readings').locator('summary').click();
    const rows = page.locator('[data-testid="rank-readings"] tr[data-range]');
    expect(await rows.count()).toBeGreaterThan(0);
    const ranged = await rows.evaluateAll((trs) =>
      trs.map((tr) => [tr.getAttribute('data-key')!, tr.getAttribute('data-range')!, tr.querySelector('.num')!.textContent!]),
    );
    for (const [key, range, text] of ranged) {
      expect(key).toMatch(/^(it[1-9]|reserved_)/);
      // low below high: the held bucket adds its bytes
      const [lo, hi] = range.split(',').map(Number);
      expect(hi).toBeGreaterThan(lo);
      expect(text).toMatch(/^[0-9.]+ [KMG]iB–[0-9.]+ [KMG]iB$/);
    }
    expect(await page.locator('[data-testid="rank-readings"] tr[data-key="it0_after_backward"][data-range]').count()).toBe(0);
    await page.screenshot({ path: shot('ui_parallel_ddp_ranges'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('offers sharding over more GPUs as a checked remedy, and applying it sets the GPUs box', async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('field-modelKind').selectOption('gpt');
    for (const [k, v] of Object.entries({ vocab: '8192', seq: '256', dim: '512', depth: '6', heads: '8', batch: '8' }))
      await fill(page, `field-${k}`, v);
    await fill(page, 'field-capacity', '500MiB');
    const verdict = page.locator('[data-testid="prediction"][data-pending="false"] [data-testid="verdict"]');
    await verdict.filter({ hasText: 'does not fit' }).waitFor({ timeout: 30_000 });
    await page.getByTestId('find-remedies').click();
    await page.getByTestId('remedy-list').waitFor({ timeout: 60_000 });
    // One GPU under 500 MiB runs out; sharded over 4 (the global batch split 2 a rank) it fits.
    const shard = page.locator('[data-testid="remedy"][data-remedy="fsdp2_4"]');
    expect(await shard.locator('.label').textContent()).toBe('shard over 4 GPUs with FSDP2 (per-rank batch 2)');
    expect(await shard.textContent()).toMatch(/hardware.*NCCL's [0-9.]+ MiB per rank counted on each card/);
    expect(await shard.locator('.warn').count()).toBe(0);
    await page.getByTestId('remedies').screenshot({ path: shot('ui_parallel_remedies') });
    await shard.getByTestId('apply-remedy').click();
    await verdict.filter({ hasText: /^\s*fits/ }).waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('field-parallelKind').inputValue()).toBe('fsdp2');
    expect(await page.getByTestId('field-parallel_world').inputValue()).toBe('4');
    expect(await page.getByTestId('field-batch').inputValue()).toBe('2');
    expect(await page.getByTestId('predicted-context').textContent()).toMatch(/\+ NCCL [0-9.]+ MiB per rank/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('finds the smallest world that fits a capped card, NCCL counted on the card', async () => {
    const { page, errors } = await openLab(env);
    await smallFsdp(page, '2');
    await fill(page, 'field-capacity', '500MiB');
    await page.getByTestId('tab-compare').click();
    const fitParams = await page.locator('[data-testid="fit-param"] option').allTextContents();
    expect(fitParams).toContain('world');
    await page.getByTestId('fit-param').selectOption('world');
    expect(await page.getByTestId('fit-run').textContent()).toBe('Find the smallest world that fits');
    await page.getByTestId('fit-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    const err = page.getByTestId('sweep-error');
    if (await err.count()) throw new Error(`fit failed in the UI: ${await err.textContent()}`);
    const result = page.getByTestId('fit-result');
    // Worlds 1 and 2 run out under 500 MiB; at 4 each rank's shard fits.
    expect(await result.getAttribute('data-value')).toBe('4');
    expect(await result.textContent()).toMatch(/Smallest world that fits in 500\.00 MiB per GPU: 4 GPUs/);
    expect(await page.getByTestId('fit-whole-card').textContent()).toMatch(/\+ CUDA context .* \+ NCCL [0-9.]+ MiB = /);
    const fitCard = sizeIn((await page.getByTestId('fit-whole-card').textContent())!, /= (.+) of /);

    // A sweep over world puts the same figure on the card for world 4 (reserved + context + NCCL).
    await page.getByTestId('sweep-preset').selectOption('world');
    await fill(page, 'sweep-values', '2, 4');
    await page.getByTestId('sweep-run').click();
    await page.locator('[data-testid="sweep-panel"][data-busy="false"]').waitFor({ timeout: 110_000 });
    if (await err.count()) throw new Error(`sweep failed in the UI: ${await err.textContent()}`);
    const rows = page.locator('[data-testid="sweep-table"] tbody tr');
    const cells = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim())));
    expect(cells.map((c) => [c[0], c[1]])).toEqual([
      ['2', 'OOM'],
      ['4', 'done'],
    ]);
    expect(cells[1][cells[1].length - 1]).toBe(fitCard);
    await page.screenshot({ path: shot('ui_parallel_fit'), fullPage: true });

    // On one GPU the fit offers no world.
    await page.getByTestId('tab-experiment').click();
    await page.getByTestId('field-parallelKind').selectOption('none');
    await page.getByTestId('tab-compare').click();
    expect(await page.locator('[data-testid="fit-param"] option').allTextContents()).not.toContain('world');
    expect(errors).toEqual([]);
    await page.close();
  });
});
