// What a run costs in the app next to the CLI, and what runs at once save a sweep.
//  1. "app run with history vs CLI run": a lesson's run (allocator history on) clicked in the
//     lab (`vramlab serve` + headless Chromium: host, WebSocket, live chart) from the click to
//     the status reading done, against `vramlab run` of the same spec (wall time of the
//     process). Target: the app at most 1.3x the CLI. Beside it the CPU seconds each took
//     (the CLI process; serve's process and the browser's processes from click to done): on a
//     shared machine the wall clock favours whichever side has more threads to schedule, and
//     the CPU ratio says what the app costs on a quiet one.
//  2. "sweep of 8 probes: serial vs parallel": `vramlab sweep` of 8 batch sizes with
//     --parallel 1 and with the default pool (at least 2 here, so the row shows something on
//     a 2-core machine).
//   node bench/ui/app_vs_cli.mjs     (needs the addon, `npm run build:main` and `npm run build:renderer`)
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const root = path.resolve(import.meta.dirname, '../..');
const cli = path.join(root, 'bin/vramlab.js');
const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-app-bench-'));
const env = { ...process.env, VRAMLAB_HOME: path.join(home, 'store') };
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);

const H100 = 'sim:h100-80gb';
const GPT2 = { kind: 'gpt', vocab: 50257, seq: 1024, dim: 768, depth: 12, heads: 12 };
// The lessons' specs as the lab sends them (renderer/src/lessons/*.ts), and the button that runs each.
const CASES = [
  {
    name: 'KV-cache lesson (GPT-2, generate 512)',
    lesson: 'kv-cache',
    action: 'Generate with a dynamic cache',
    spec: {
      model: GPT2,
      batch: 16,
      precision: 'bf16',
      mode: 'generate',
      prompt: 512,
      new_tokens: 512,
      cache: 'dynamic',
      device: H100,
      history: true,
    },
  },
  {
    name: 'GPT-2 small train step (bf16, Adam)',
    lesson: 'transformer-memory',
    action: 'Run GPT-2 small',
    spec: { model: GPT2, batch: 8, precision: 'bf16', optimizer: 'adam', device: H100, history: true },
  },
];

const best = (xs) => Math.min(...xs);

// CPU seconds from /proc (Linux; 0 elsewhere): a process's own, its waited-for children's,
// and every live descendant of a process (the browser's renderer, GPU and utility processes).
const TICK = 100;
const stat = (pid) => {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
};
const ownCpu = (pid) => {
  const f = stat(pid);
  return f ? (Number(f[11]) + Number(f[12])) / TICK : 0;
};
const childrenCpu = () => {
  const f = stat('self');
  return f ? (Number(f[13]) + Number(f[14])) / TICK : 0;
};
function treeCpu(root) {
  let pids;
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  const parent = new Map(pids.map((p) => [p, stat(p)?.[1]]));
  let sum = 0;
  for (const p of pids) {
    for (let q = p, hops = 0; q && hops < 8; q = parent.get(q), hops++)
      if (q === String(root)) {
        sum += ownCpu(p);
        break;
      }
  }
  return sum;
}

function cliRun(spec) {
  const file = path.join(home, 'spec.json');
  writeFileSync(file, JSON.stringify(spec));
  const t0 = performance.now();
  const c0 = childrenCpu();
  const r = spawnSync(process.execPath, [cli, 'run', file, '-q', '--json'], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`vramlab run failed: ${r.stderr}`);
  return { s: (performance.now() - t0) / 1000, cpu: childrenCpu() - c0 };
}

async function startServe() {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const onData = (d) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+\/\S*)/.exec(out);
      if (m) resolve(m[1]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`vramlab serve exited ${code}: ${out}`)));
  });
  return { url, pid: child.pid, close: () => child.kill('SIGTERM') };
}

async function appRun(page, c) {
  await page.getByTestId('tab-lessons').click();
  await page.getByTestId(`lesson-${c.lesson}`).click();
  const before = await page
    .getByTestId('run-view')
    .getAttribute('data-run-id')
    .catch(() => null);
  const cpu0 = ownCpu(serve.pid) + treeCpu(browserPid);
  const t0 = performance.now();
  await page.getByTestId('lesson-action').filter({ hasText: c.action }).click();
  await page.waitForFunction(
    (prev) => {
      const view = document.querySelector('[data-testid="run-view"]');
      const id = view?.getAttribute('data-run-id');
      const status = document.querySelector('[data-testid="run-status"]')?.textContent ?? '';
      return !!id && id !== prev && ['done', 'error', 'oom', 'cancelled'].includes(status);
    },
    before,
    { timeout: 300_000, polling: 20 },
  );
  const s = (performance.now() - t0) / 1000;
  const cpu = ownCpu(serve.pid) + treeCpu(browserPid) - cpu0;
  const status = await page.getByTestId('run-status').textContent();
  if (status !== 'done') throw new Error(`the app's run ended ${status}`);
  return { s, cpu };
}

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
// The browser's main process: the child of this one running chromium (Playwright starts it
// here). Matched by name, not path: /usr/bin/chromium is a script that execs the real binary
// from elsewhere, and a path match found nothing, so the app's CPU column left the browser out.
const browserPid = (() => {
  const name = path.basename(chromiumPath);
  try {
    for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x)))
      if (stat(p)?.[1] === String(process.pid) && readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[0].includes(name)) return p;
  } catch {
    /* not Linux: no CPU column */
  }
  return -1;
})();
const serve = await startServe();
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`${serve.url.replace(/#.*$/, '')}#lessons`);
  await page.locator('[data-testid="connection"]', { hasText: 'connected' }).waitFor();
  console.log(
    `${'app run with history vs CLI run'.padEnd(44)} ${'CLI s'.padStart(7)} ${'app s'.padStart(7)} ${'ratio'.padStart(6)} ${'target'.padStart(7)}      ${'CLI cpu s'.padStart(9)} ${'app cpu s'.padStart(9)} ${'cpu ratio'.padStart(9)}`,
  );
  for (const c of CASES) {
    const cli = [];
    const app = [];
    // Interleaved, best of REPEATS each: a shared machine's load hits both alike.
    for (let i = 0; i < REPEATS; i++) {
      cli.push(cliRun(c.spec));
      app.push(await appRun(page, c));
    }
    const ratio = best(app.map((r) => r.s)) / best(cli.map((r) => r.s));
    const cpuRatio = best(app.map((r) => r.cpu)) / best(cli.map((r) => r.cpu));
    console.log(
      `${c.name.padEnd(44)} ${best(cli.map((r) => r.s))
        .toFixed(2)
        .padStart(7)} ${best(app.map((r) => r.s))
        .toFixed(2)
        .padStart(7)} ${ratio.toFixed(2).padStart(6)} ${'1.30'.padStart(7)}${ratio <= 1.3 ? '      ' : '  MISS'} ${best(
        cli.map((r) => r.cpu),
      )
        .toFixed(2)
        .padStart(9)} ${best(app.map((r) => r.cpu))
        .toFixed(2)
        .padStart(9)} ${cpuRatio.toFixed(2).padStart(9)}`,
    );
  }
  await page.close();
} finally {
  serve.close();
  await browser.close();
}

// Sweep: 8 batch sizes of a transformer train run, serial and through the pool.
const sweepSpec = path.join(home, 'sweep.json');
writeFileSync(
  sweepSpec,
  JSON.stringify({ model: { ...GPT2, depth: 4 }, precision: 'bf16', optimizer: 'adamw', iterations: 2, device: H100 }),
);
const cores = os.availableParallelism();
const pool = Math.max(2, Math.min(cores - 1, 4));
const sweepWall = (parallel) => {
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [cli, 'sweep', sweepSpec, '--param', 'batch', '--values', '1,2,3,4,5,6,7,8', '--parallel', String(parallel), '--json', '-q'],
    { env, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`vramlab sweep failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  return { s: (performance.now() - t0) / 1000, peaks: out.runs.map((x) => x.peak_allocated).join(',') };
};
const serial = [];
const parallel = [];
let peaks = null;
for (let i = 0; i < REPEATS; i++) {
  for (const [list, n] of [
    [serial, 1],
    [parallel, pool],
  ]) {
    const r = sweepWall(n);
    if (peaks !== null && r.peaks !== peaks) throw new Error('a parallel sweep measured other peaks than a serial one');
    peaks = r.peaks;
    list.push(r.s);
  }
}
console.log(
  `\n${'sweep of 8 probes: serial vs parallel'.padEnd(44)} ${'serial s'.padStart(9)} ${'parallel s'.padStart(11)} ${'runs at once'.padStart(13)} ${'speedup'.padStart(8)} (${cores} cores)`,
);
console.log(
  `${'GPT-2 depth 4, batch 1..8 (bf16, AdamW)'.padEnd(44)} ${best(serial).toFixed(2).padStart(9)} ${best(parallel).toFixed(2).padStart(11)} ${String(pool).padStart(13)} ${(best(serial) / best(parallel)).toFixed(2).padStart(8)}`,
);
rmSync(home, { recursive: true, force: true });
