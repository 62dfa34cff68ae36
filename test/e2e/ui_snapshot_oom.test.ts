// A snapshot dumped at an OOM, in Chromium on a real `vramlab serve`: the first tab says why
// it ran out of memory (a cap, which one, how much the job needs) and where the memory was;
// the timeline marks the OOM and the cap and jumps to the OOM; the largest allocations name
// the user's Python before torch's; the what-if grid finds the smallest capacity per setting,
// and a replay at that capacity fits while one 2 MiB lower does not.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, type UiEnv } from './ui_helpers';

const FIX = path.resolve(import.meta.dirname, '../fixtures/torch');
const job = JSON.parse(readFileSync(path.join(FIX, 'residual_oom_capped.stats.json'), 'utf8'));
const GiB = 2 ** 30;
const MiB = 2 ** 20;

describe.skipIf(!haveChromium())('UI: a snapshot that ran out of memory', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('answers the OOM on the first tab, marks it on the timeline, and finds the smallest capacity per setting', async () => {
    const { page, errors } = await openLab(env, 'snapshots');
    await page.getByTestId('snap-drop').waitFor();
    await page.getByTestId('snap-file').setInputFiles(path.join(FIX, 'residual_oom_capped.pickle'));
    await page.getByTestId('snap-name').filter({ hasText: 'residual_oom_capped.pickle' }).waitFor({ timeout: 30_000 });

    // The first tab is the one open, and it holds the why.
    expect(await page.getByTestId('snapview-overview').getAttribute('aria-selected')).toBe('true');
    const why = page.getByTestId('snap-why');
    await why.waitFor();
    expect(await page.getByTestId('snap-recorded-oom').textContent()).toMatch(
      /At event 1892 the job asked for 64\.00 MiB .*a memory cap \(set_per_process_memory_fraction\), not the card, refused it/s,
    );
    expect(await page.getByTestId('snap-oom-cap').textContent()).toMatch(/cap of 2\.00 GiB/);
    expect(job.capacity_bytes).toBe(2 * GiB);
    // The failing line of the user's own code, not torch's relu.
    expect(await page.getByTestId('snap-oom-frame').textContent()).toMatch(/^forward \(t2_protocol\.py:16\)$/);
    expect(await page.getByTestId('snap-where-oom').locator('tbody tr').count()).toBeGreaterThan(2);
    // How much the job needs with its own settings: more than the cap it had.
    const needs = page.getByTestId('snap-oom-needs');
    await needs.waitFor({ timeout: 30_000 });
    const needsText = (await needs.textContent())!;
    expect(needsText).toMatch(/needs at least 2\.\d\d GiB: [\d.]+ MiB more than that cap/);
    const needsBytes = Number((await needs.locator('strong').getAttribute('title'))!.replace(/[^0-9]/g, ''));
    expect(needsBytes).toBeGreaterThan(2 * GiB);

    // The timeline marks the OOM at its event and the cap, both in the danger colour.
    const tl = page.getByTestId('snap-timeline');
    await tl.waitFor();
    const oomMark = page.getByTestId('snap-tl-oom');
    expect(await oomMark.textContent()).toBe('OOM · 64.00 MiB at event 1892');
    expect(await page.getByTestId('snap-tl-cap').textContent()).toBe('cap 2.00 GiB');
    expect(await tl.getAttribute('aria-label')).toMatch(/Out of memory at event 1892\. Memory cap 2\.00 GiB\./);
    const canvasBox = (await tl.locator('canvas').boundingBox())!;
    const markBox = (await oomMark.boundingBox())!;
    // The label ends 4 px left of the line; the line is where event 1892 falls on the axis
    // (x runs from "before the trace", -1, to the last event, 1928, between the paddings).
    const lineX = markBox.x + markBox.width + 4 - canvasBox.x;
    const want = 72 + ((1892 + 1) / 1929) * (canvasBox.width - 72 - 22);
    expect(Math.abs(lineX - want)).toBeLessThan(2);
    const pixel = await page.evaluate(
      ({ x }) => {
        const c = document.querySelector('[data-testid="snap-timeline"] canvas') as HTMLCanvasElement;
        const d = c.getContext('2d')!.getImageData(Math.round(x * devicePixelRatio), Math.round(c.height / 2), 1, 1).data;
        const danger = getComputedStyle(document.documentElement).getPropertyValue('--danger').trim();
        return { rgb: [d[0], d[1], d[2]], danger };
      },
      { x: lineX },
    );
    const hex = (h: string) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
    expect(pixel.danger).toMatch(/^#[0-9a-f]{6}$/i);
    pixel.rgb.forEach((v, k) => expect(Math.abs(v - hex(pixel.danger)[k])).toBeLessThan(24));

    // Jump to the OOM: the cursor sits on its event and the tooltip says so.
    await page.getByTestId('snap-tl-jump-oom').click();
    await page.getByTestId('snap-timeline-tip-oom').waitFor();
    expect(await tl.getAttribute('aria-valuenow')).toBe('1892');
    expect(await page.getByTestId('snap-timeline-tip-oom').textContent()).toBe('out of memory at event 1892: 64.00 MiB requested');
    await page.screenshot({ path: shot('ui_snapshot_oom'), fullPage: true });
    // The why's button opens the allocator state at that event.
    await page.getByTestId('snap-oom-state').click();
    await page
      .getByTestId('snap-state-event')
      .filter({ hasText: /event 1892/ })
      .waitFor();

    // Largest allocations: where a stack has a frame of the user's Python, it comes first.
    await page.getByTestId('snapview-largest').click();
    const rows = page.getByTestId('snap-largest-where');
    await rows.first().waitFor();
    const listed = await rows.evaluateAll((ds) =>
      ds.map((d) => ({
        kind: d.getAttribute('data-kind'),
        summary: d.querySelector('summary')!.textContent!,
        frames: [...d.querySelectorAll('li')].map((li) => li.textContent!),
      })),
    );
    const isUser = (f: string) => /^(.*\.py|<(?!frozen )[^>]+>):\d+:/.test(f) && !/(^|\/)torch\//.test(f.split(':')[0]);
    const isPython = (f: string) => /^(.*\.py|<(?!frozen )[^>]+>):\d+:/.test(f);
    let mixed = 0;
    for (const r of listed) {
      if (r.frames.some(isUser)) {
        expect(r.kind).toBe('user');
        expect(isUser(r.frames[0])).toBe(true);
        if (r.frames.some((f) => isPython(f) && !isUser(f))) mixed++;
      } else if (!r.frames.some(isPython)) {
        // Autograd's backward thread records no Python: said so, not passed off as the caller.
        expect(r.kind).toBe('native');
        expect(r.summary).toMatch(/^no Python frame/);
      }
    }
    // Stacks holding both the user's frames and torch's (relu, linear) were among them.
    expect(mixed).toBeGreaterThan(2);
    await page.screenshot({ path: shot('ui_snapshot_largest_python_first'), fullPage: true });

    // The what-if grid: the smallest capacity for each setting, filled in one by one.
    await page.getByTestId('snapview-whatif').click();
    await page.getByTestId('snap-grid-mode').check();
    await page.getByTestId('snap-grid-settings').fill('\nexpandable_segments:True\nmax_split_size_mb:256');
    await page.getByTestId('snap-grid-caps').fill('2GiB, device');
    await page.getByTestId('snap-run-grid').click();
    await page
      .getByTestId('snap-grid-min-progress')
      .filter({ hasText: /3\/3 settings, each a bisection by replay/ })
      .waitFor({ timeout: 60_000 });
    const mins = await page.getByTestId('snap-grid-min').evaluateAll((tds) => tds.map((td) => Number(td.getAttribute('data-bytes'))));
    expect(mins).toHaveLength(3);
    for (const m of mins) {
      expect(m % (2 * MiB)).toBe(0);
      expect(m).toBeGreaterThan(2 * GiB); // none holds the job in the cap it ran out under
    }
    // The default settings' answer is the one the first tab gave.
    expect(mins[0]).toBe(needsBytes);
    await page.screenshot({ path: shot('ui_snapshot_grid_min_capacity'), fullPage: true });

    // Held to the replay: at that capacity the default settings fit, 2 MiB lower they do not.
    await page.getByRole('radio', { name: 'compare one setting' }).check();
    await page.getByTestId('snap-conf-input').fill('');
    for (const [cap, outcome] of [
      [mins[0] / MiB, /^fits/],
      [mins[0] / MiB - 2, /^OOM at event/],
    ] as const) {
      await page.getByTestId('snap-capacity').fill(`${cap}MiB`);
      await page.getByTestId('snap-run-whatif').click();
      await expect
        .poll(async () => (await page.getByTestId('snap-whatif-outcome').textContent()) ?? '', { timeout: 30_000 })
        .toMatch(outcome);
    }
    expect(errors).toEqual([]);
    await page.close();
  });
});
