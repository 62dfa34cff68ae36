// Frame-rate bench for the live memory chart: builds the bench page (the real MemoryChart
// fed synthetic progress batches), opens it in headless Chromium, pre-fills 100,000
// points, streams 1,000 samples per second and counts animation frames. Target: >= 30 fps.
import { build } from 'vite';
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const out = path.join(root, 'test-output', 'bench-ui');
const seconds = Number(process.env.BENCH_SECONDS ?? 6);

await mkdir(path.join(root, 'test-output', 'screenshots'), { recursive: true });
await build({ configFile: path.join(here, 'vite.config.ts') });

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };
const server = createServer(async (req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
  const file = path.join(out, rel);
  if (!file.startsWith(out)) return res.writeHead(403).end();
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-background-timer-throttling', '--disable-renderer-backgrounding'],
});
const rows = [];
try {
  for (const view of ['lines', 'stacked']) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 560 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${port}/index.html?prefill=100000&rate=1000&batchMs=50&view=${view}`);
    await page.waitForFunction(() => window.bench?.ready, null, { timeout: 60_000 });
    await page.waitForTimeout(500);
    await page.evaluate(() => window.bench.start());
    await page.waitForTimeout(seconds * 1000);
    const r = await page.evaluate(() => window.bench.stop());
    if (errors.length) throw new Error(`bench page errors: ${errors.join('; ')}`);
    rows.push({ view, ...r });
    await page.screenshot({ path: path.join(root, 'test-output', 'screenshots', `bench_chart_${view}.png`) });
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}

const pad = (s, n) => String(s).padStart(n);
console.log('live memory chart, headless Chromium (software rendering), 1280x560');
console.log(`${'view'.padEnd(8)} ${pad('points', 8)} ${pad('samples/s', 10)} ${pad('fps', 6)} ${pad('worst frame ms', 15)} target`);
let ok = true;
for (const r of rows) {
  const pass = r.fps >= 30;
  ok &&= pass;
  console.log(
    `${r.view.padEnd(8)} ${pad(r.points, 8)} ${pad(r.rate.toFixed(0), 10)} ${pad(r.fps.toFixed(1), 6)} ${pad(r.longestFrameMs.toFixed(1), 15)} ${pass ? '>= 30 ok' : '< 30 FAIL'}`,
  );
}
if (!ok) process.exitCode = 1;
