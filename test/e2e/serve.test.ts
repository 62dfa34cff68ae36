import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { haveChromium, launch, SHOTS } from '../helpers/browser';
import { startTestServer } from '../helpers/server';
import { parseFrame } from '../helpers/frames';

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server?.close());

function openWs(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function nextMessage(ws: WebSocket): Promise<any> {
  return new Promise((resolve) => ws.once('message', (d) => resolve(parseFrame(d))));
}

describe('vramlab serve: WebSocket access', () => {
  it('binds 127.0.0.1 and puts a token in the URL', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{20,}$/);
  });

  it('refuses a WebSocket without the token, or with a wrong one', async () => {
    const base = server.wsUrl.replace(/\?token=.*/, '');
    await expect(openWs(base)).rejects.toThrow('HTTP 403');
    await expect(openWs(`${base}?token=${'x'.repeat(server.token.length)}`)).rejects.toThrow('HTTP 403');
  });

  it('refuses a WebSocket from a foreign Origin even with the token', async () => {
    await expect(openWs(server.wsUrl, { Origin: 'http://evil.example' })).rejects.toThrow('HTTP 403');
  });

  it('accepts its own page origin and answers requests', async () => {
    const ws = await openWs(server.wsUrl, { Origin: `http://127.0.0.1:${server.port}` });
    const reply = nextMessage(ws);
    ws.send(JSON.stringify({ id: 1, method: 'devices.list' }));
    const msg = await reply;
    expect(msg).toMatchObject({ type: 'response', id: 1, ok: true });
    expect(msg.result.some((d: { id: string }) => d.id === 'sim:h100-80gb')).toBe(true);
    ws.close();
  });

  it('answers malformed messages with clear errors and keeps serving', async () => {
    const ws = await openWs(server.wsUrl);
    const cases: Array<[string | Buffer, RegExp]> = [
      ['{not json', /not valid JSON/],
      ['42', /malformed request/],
      [JSON.stringify({ id: 7 }), /malformed request: method/],
      [JSON.stringify({ id: 8, method: 'no.such' }), /unknown method "no.such"/],
      [JSON.stringify({ id: 9, method: 'devices.list', params: { x: 1 } }), /devices.list: /],
      [Buffer.from([1, 2, 3]), /binary frames/],
    ];
    for (const [payload, expected] of cases) {
      const reply = nextMessage(ws);
      ws.send(payload);
      const msg = await reply;
      expect(msg.ok).toBe(false);
      expect(msg.error.message).toMatch(expected);
    }
    const reply = nextMessage(ws);
    ws.send(JSON.stringify({ id: 10, method: 'devices.list' }));
    expect((await reply).ok).toBe(true);
    ws.close();
  });

  it('does not serve files outside the renderer folder', async () => {
    const res = await fetch(`http://127.0.0.1:${server.port}/..%2f..%2fpackage.json`);
    expect([403, 404]).toContain(res.status);
    const page = await fetch(`http://127.0.0.1:${server.port}/`);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
  });
});

describe.skipIf(!haveChromium())('vramlab serve in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launch();
  });
  afterAll(async () => browser?.close());

  it('shows the device list', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(server.url);
    await page.getByRole('tab', { name: 'Devices' }).click();
    const row = page.locator('[data-device-id="sim:h100-80gb"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('79.18 GiB');
    expect(await page.locator('[role="status"]').textContent()).toContain('connected');
    await page.screenshot({ path: path.join(SHOTS, 'devices.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
