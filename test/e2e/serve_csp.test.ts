// The served page may open a WebSocket only to where it came from, in real Chromium: it may open a WebSocket to the host:port
// it came from and nowhere else (the CSP used to allow ws://127.0.0.1:* and ws://localhost:*,
// so a compromised page could reach any other local WebSocket service).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import type { Browser } from 'playwright-core';
import { haveChromium, launch } from '../helpers/browser';
import { startTestServer } from '../helpers/server';

let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser | undefined;
let other: net.Server;
let otherPort = 0;

beforeAll(async () => {
  server = await startTestServer();
  if (haveChromium()) browser = await launch();
  other = net.createServer((c) => c.destroy()); // some other local service
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
  otherPort = (other.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await browser?.close();
  other?.close();
  await server?.close();
});

describe.runIf(haveChromium())('served page CSP', () => {
  it('blocks a WebSocket to another local port, allows its own', async () => {
    const page = await browser!.newPage();
    const violations: string[] = [];
    await page.exposeFunction('reportViolation', (uri: string) => violations.push(uri));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        (window as unknown as { reportViolation(u: string): void }).reportViolation(e.blockedURI),
      );
    });
    await page.goto(server.url);
    await page.locator('[data-testid="connection"]', { hasText: 'connected' }).waitFor();
    const blocked = await page.evaluate((port) => {
      try {
        new WebSocket(`ws://127.0.0.1:${port}/`);
        return false;
      } catch {
        return true; // CSP violations throw SecurityError synchronously
      }
    }, otherPort);
    await page.waitForTimeout(200);
    expect(blocked || violations.some((v) => v.includes(String(otherPort)))).toBe(true);
    expect(violations.some((v) => v.includes(String(server.port)))).toBe(false);
    await page.close();
  });
});
