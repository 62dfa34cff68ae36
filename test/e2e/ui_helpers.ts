// Shared setup for the UI end-to-end tests: a real `vramlab serve` (real addon, host and
// run store in a temp home) and a Chromium page on it that fails the test on page errors.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { onTestFinished } from 'vitest';
import { launch, SHOTS } from '../helpers/browser';
import { startTestServer } from '../helpers/server';

export interface UiEnv {
  server: Awaited<ReturnType<typeof startTestServer>>;
  browser: Browser;
  home: string;
  close(): Promise<void>;
}

export async function startUi(): Promise<UiEnv> {
  const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-ui-'));
  const server = await startTestServer(home);
  const browser = await launch();
  return {
    server,
    browser,
    home,
    close: async () => {
      await browser.close();
      await server.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface UiPage {
  page: Page;
  errors: string[];
}

/**
 * Opens the lab at a tab; collects uncaught page errors, console errors and CSP violations,
 * and fails the test that opened it if any happened, whether or not the test looks.
 */
export async function openLab(
  env: UiEnv,
  tab = 'experiment',
  opts: { dark?: boolean; viewport?: { width: number; height: number }; beforeOpen?: (page: Page) => void } = {},
): Promise<UiPage> {
  const page = await env.browser.newPage({
    viewport: opts.viewport ?? { width: 1360, height: 900 },
    acceptDownloads: true,
    colorScheme: opts.dark ? 'dark' : 'light',
  });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.stack ?? e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/WebSocket connection .* failed|ERR_CONNECTION_REFUSED/.test(m.text())) errors.push(m.text());
  });
  onTestFinished(() => {
    if (errors.length) throw new Error(`the page reported errors:\n${errors.join('\n')}`);
  });
  opts.beforeOpen?.(page); // listeners that must see the page from its first request (WebSocket frames)
  await page.goto(`${env.server.url}#${tab}`);
  await page.locator('[data-testid="connection"]', { hasText: 'connected' }).waitFor();
  return { page, errors };
}

export function shot(name: string): string {
  return path.join(SHOTS, `${name}.png`);
}

/** Sets a text field the way a user types into it. */
export async function fill(page: Page, testid: string, value: string): Promise<void> {
  const el = page.getByTestId(testid);
  await el.fill(value);
}

/** Waits for the watched run to settle; on a run error, saves a screenshot and fails with the host's message. */
export async function waitForRun(page: Page, name: string): Promise<string> {
  await page.getByTestId('run-view').waitFor();
  await page.waitForFunction(
    () => ['done', 'error', 'oom', 'cancelled'].includes(document.querySelector('[data-testid="run-status"]')?.textContent ?? ''),
    null,
    { timeout: 100_000 },
  );
  const err = page.getByTestId('run-error');
  if (await err.count()) {
    await page.screenshot({ path: shot(`${name}_failed`), fullPage: true });
    throw new Error(`run failed in the UI: ${await err.textContent()}`);
  }
  return (await page.getByTestId('run-status').textContent()) ?? '';
}
