// Errors from the host show in place: a failed run says why next to its chart, and a lost
// connection is a banner over a page that keeps its content.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/browser';
import { openLab, shot, startUi, type UiEnv } from './ui_helpers';

describe.skipIf(!haveChromium())('UI: errors in place', () => {
  let env: UiEnv;
  beforeAll(async () => {
    env = await startUi();
  });
  afterAll(async () => env?.close());

  it('keeps the page and shows a banner when the connection to the host is lost', async () => {
    const { page, errors } = await openLab(env);
    await page.getByTestId('predicted-peak').waitFor();
    await env.server.close();
    await page.getByTestId('connection-lost').waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('connection').textContent()).not.toContain('connected');
    // The form is still there and usable.
    expect(await page.getByTestId('predicted-peak').isVisible()).toBe(true);
    await page.screenshot({ path: shot('ui_connection_lost'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
